package fanout

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// alive says whether pid is a process that has not ended (a zombie no
// one has reaped yet has ended).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// A driver killed with SIGKILL takes its local workers with it: the
// kernel sends them SIGTERM, and they are gone within seconds.
func TestWorkersDieWithTheDriver(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FANOUT_TEST_DRIVER="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pids []int
	deadline := time.Now().Add(30 * time.Second)
	for len(pids) < 2 {
		pids = pids[:0]
		for i := range 2 {
			b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("pid-%d", i)))
			if err != nil {
				break
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			pids = append(pids, pid)
		}
		if time.Now().After(deadline) {
			t.Fatal("the workers did not start")
		}
		time.Sleep(20 * time.Millisecond) // polling files the workers write
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("worker %d ended before the driver was killed", pid)
		}
	}
	killed := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, pid := range pids {
		for alive(pid) {
			if time.Since(killed) > 5*time.Second {
				t.Fatalf("worker %d still runs 5 s after its driver was killed", pid)
			}
			time.Sleep(10 * time.Millisecond) // polling /proc: no event reaches us from a grandchild
		}
	}
	t.Logf("workers gone %v after the driver's SIGKILL", time.Since(killed).Round(time.Millisecond))
}

// However many workers a phase asks for, a Local runs at most its limit
// at once (4 a core by default), and all tasks are done.
func TestLocalCapsWorkers(t *testing.T) {
	for _, c := range []struct {
		limit, want int
	}{{0, localLimit()}, {3, 3}} {
		l := NewLocal([]string{"/bin/sh", "-c", "sleep 0.1"})
		l.Limit = c.limit
		tasks := 3 * c.want
		most, done := 0, 0
		err := l.RunPhase(context.Background(), PhaseRun{Job: "job-t", Spec: "spec", Tasks: tasks, Workers: 1000, Attempts: 1, Kind: PhaseMap, Argv: []string{},
			Progress: func(p Progress) { most, done = max(most, p.Running), p.Done }})
		if err != nil {
			t.Fatal(err)
		}
		if most > c.want || most < 2 || done != tasks {
			t.Errorf("limit %d: %d workers at once (want at most %d), %d of %d tasks done", c.limit, most, c.want, done, tasks)
		}
	}
}
