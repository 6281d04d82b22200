//go:build !linux

package main

import (
	"context"
	"errors"
)

// Fusing piped stages needs abstract Unix sockets (Linux); elsewhere each
// stage runs in its own process.

type fuseOffer struct{}

func offerFusion(string, any) *fuseOffer          { return nil }
func (*fuseOffer) setPlan(*fusePlan, string)      {}
func (*fuseOffer) hold(context.Context, any) bool { return false }
func (*fuseOffer) fused() bool                    { return false }
func (*fuseOffer) wait(context.Context) error     { return nil }
func (*fuseOffer) close()                         {}

type fuseUpstream struct{ plan *fusePlan }

func (*fuseUpstream) report(int)                                {}
func requestFusion(context.Context, string, any) *fuseUpstream  { return nil }
func (*fuseUpstream) watch(context.CancelCauseFunc, *fuseOffer) {}

var errUpstreamStopped = errors.New("a stage before this one was stopped")
