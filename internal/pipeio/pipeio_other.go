//go:build !linux

package pipeio

import (
	"errors"
	"os"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// ErrNoEndMarker is the input ending at a message boundary without the
// end-of-stream marker.
var ErrNoEndMarker = errors.New("stream ended without its end-of-stream marker")

// SwitchMarker is never written off Linux; a reader without a Conn
// reads it as the invalid length it is.
var SwitchMarker = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Listener is the writing end's socket; there is none off Linux.
type Listener struct{}

// Listen returns nil: off Linux every pipe carries the plain stream.
func Listen(*os.File) *Listener { return nil }

// Switch is never called on a nil Listener.
func (*Listener) Switch(func([]byte) error) (*Writer, error) { return nil, nil }
func (*Listener) Close()                                     {}

// Conn is the reading end's connection; there is none off Linux.
type Conn struct{}

// Dial returns nil: off Linux every pipe carries the plain stream.
func Dial(*os.File) *Conn { return nil }

// Take is never called on a nil Conn.
func (*Conn) Take() ipc.MessageReader { return nil }
func (*Conn) Close()                  {}

// Writer is the writing end of a hand-off; there is none off Linux.
type Writer struct{}

func (*Writer) Write([][]byte) error { return nil }
func (*Writer) End() error           { return nil }
func (*Writer) Close()               {}
