package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sluice-data/sluice/format"
)

func TestExecCancelKillsTheProcessGroup(t *testing.T) {
	mem := checkedMem(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	l := newLines(t, "started")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// The grandchild would keep the pipes open were it left alive.
		_, err := runRows(ctx, mem, manyRows(t, mem, 10), program(l, format.IPCStream, format.IPCStream,
			"sh", "-c", fmt.Sprintf("sleep 600 & echo $! > %s; echo started >&2; wait", pidFile)))
		done <- err
	}()
	<-l.seen
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// SIGKILL went to the whole group; its delivery is the kernel's: wait
	// for the child's end as an event (a pidfd turns readable), and fail
	// if it does not come.
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 10_000); err != nil || n != 1 {
		t.Fatalf("the program's child %d is still running (poll %d, %v)", pid, n, err)
	}
}
