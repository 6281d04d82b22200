package stdio

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// fGetPipeSize is F_GETPIPE_SZ.
const fGetPipeSize = 1032

// After QuietPipes a pipe holds 1 MiB, and SIGPIPE is ignored: writing
// to stdout once its reader is gone is an EPIPE error, not the end of the
// process. (On other descriptors Go makes it EPIPE either way.)
func TestQuietPipes(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	QuietPipes(r, w)
	n, _, errno := syscall.Syscall(syscall.SYS_FCNTL, w.Fd(), fGetPipeSize, 0)
	if errno != 0 || n != pipeSize {
		t.Errorf("pipe size %d (%v), want %d", n, errno, pipeSize)
	}
	if !signal.Ignored(syscall.SIGPIPE) {
		t.Error("SIGPIPE is not ignored")
	}
	r.Close()
	if _, err := w.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("a write with no reader: %v, want EPIPE", err)
	}
}
