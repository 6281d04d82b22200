package stickyerr

import (
	"errors"
	"fmt"
	"testing"
)

type failing struct{ n int }

func (f *failing) Write(p []byte) (int, error) {
	if f.n++; f.n > 1 {
		return 0, errors.New("full")
	}
	return len(p), nil
}

func TestWriter(t *testing.T) {
	f := &failing{}
	w := &Writer{W: f}
	fmt.Fprint(w, "a")
	fmt.Fprint(w, "b")
	fmt.Fprint(w, "c")
	if w.Err == nil || w.Err.Error() != "full" || f.n != 2 {
		t.Errorf("err %v after %d writes", w.Err, f.n)
	}
}
