//go:build !linux

package scanbench

import "time"

type cpuSample struct {
	at         time.Time
	own        time.Duration
	busy, all  time.Duration
	haveSystem bool
}

// sampleCPU knows only the time elsewhere.
func sampleCPU() cpuSample { return cpuSample{at: time.Now()} }
