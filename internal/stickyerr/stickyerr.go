// Package stickyerr keeps the first error of a run of writes, so that
// text is written with plain Fprintf calls and fails once, at the end.
package stickyerr

import "io"

// Writer writes to W until a write fails; from then on every write
// returns that error, which Err holds.
type Writer struct {
	W   io.Writer
	Err error
}

// Write writes p to W unless an earlier write failed.
func (e *Writer) Write(p []byte) (int, error) {
	if e.Err != nil {
		return 0, e.Err
	}
	n, err := e.W.Write(p)
	e.Err = err
	return n, err
}
