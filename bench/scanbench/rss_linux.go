//go:build linux

package scanbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// PeakRSS runs a command to its end and returns the most resident memory
// it ever had and how long it ran. Measuring a child keeps the
// benchmark's own heap out of the figure. Output goes to out; a non-zero
// exit is an error.
//
// The child's ru_maxrss is not enough on its own: Go starts children with
// vfork semantics, and at exec Linux records the high-water mark of the
// address space being left, which is this process's, so ru_maxrss is
// max(ours, the child's). When that exceeds our own high-water mark it is
// the child's; otherwise the child's VmHWM, polled from /proc while it
// runs, is used (the mark only grows, so at most the last few
// milliseconds are missed).
func PeakRSS(ctx context.Context, out io.Writer, name string, args ...string) (int64, time.Duration, error) {
	ours := vmHWM("/proc/self/status")
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", name, err)
	}
	polled := make(chan int64, 1)
	stop := make(chan struct{})
	go func() {
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		var peak int64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, vmHWM(status))
			select {
			case <-stop:
				polled <- peak
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	d := time.Since(start)
	close(stop)
	seen := <-polled
	if err != nil {
		return 0, d, fmt.Errorf("%s: %w", name, err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0, d, errors.New("no resource usage for the child")
	}
	if maxrss := ru.Maxrss << 10; maxrss > ours { // KiB on Linux
		return maxrss, d, nil
	}
	return seen, d, nil
}

// vmHWM reads the VmHWM line of a /proc status file, in bytes; 0 when the
// process is gone or the line missing.
func vmHWM(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	i := bytes.Index(b, []byte("VmHWM:"))
	if i < 0 {
		return 0
	}
	f := bytes.Fields(b[i+len("VmHWM:"):])
	if len(f) < 2 || string(f[1]) != "kB" {
		return 0
	}
	n, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return n << 10
}
