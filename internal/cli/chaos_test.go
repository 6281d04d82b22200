package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/await"
)

// TestRunFanOutChaos runs the shuffle and sort queries on MinIO with
// faults everywhere at once: the store answers 503s, resets and stalls
// (--sim on every store, the job's included), workers are SIGKILLed at
// random, and in one run of each query the driver is SIGKILLed after
// the map phase and the job resumed. Each run must give one process's
// bytes (no row lost or counted twice) and leave no object under the
// job store, no unfinished upload and no file in the workers' TMPDIR.
func TestRunFanOutChaos(t *testing.T) {
	tg := minioTarget(t)
	for _, name := range []string{"shuffle", "sort"} {
		q := tg.query(name) + " | to-csv"
		want := sluice(t, tg.env, "run", q)
		if want.code != 0 || want.stdout == "" {
			t.Fatalf("%s in one process: %s", name, want.stderr)
		}
		for round := range 3 {
			seed := randInt(1 << 30)
			killDriver := round == 2
			tmp := t.TempDir()
			env := append([]string{"TMPDIR=" + tmp}, tg.env...)
			sim := fmt.Sprintf("slowdown=0.03,reset=0.01,stall=0.01:300ms,seed=%d", seed)
			// Every commit waits a moment, a longer one when the driver is
			// to be killed: its reduce phase then surely outlasts a poll.
			pause := "100ms"
			if killDriver {
				pause = "1s"
			}
			args := []string{"run", "--sim", sim, "--workers", "4", "--attempts", "6", "--store", tg.jobs, "--piece-size", "128KiB",
				"--x-pause-before-commit", pause}
			cmd, out, errb := startRun(t, env, append(args, q)...)
			var wg sync.WaitGroup
			stop := make(chan struct{})
			var killed []int
			wg.Add(1)
			go func() { // kill a random worker now and then, twice at most
				defer wg.Done()
				for len(killed) < 2 {
					select {
					case <-stop:
						return
					case <-time.After(time.Duration(200+randInt(600)) * time.Millisecond):
					}
					if pids := workerPids(t, cmd.Process.Pid); len(pids) > 0 {
						pid := pids[randInt(len(pids))]
						if syscall.Kill(pid, syscall.SIGKILL) == nil {
							killed = append(killed, pid)
						}
					}
				}
			}()
			what := fmt.Sprintf("%s round %d (--sim %s)", name, round, sim)
			if killDriver {
				await.Until(t, what+": the map phase's manifest", func() bool {
					return strings.Contains(strings.Join(tg.left(t), " "), "/p0/manifest.json")
				})
				close(stop)
				wg.Wait()
				workers := workerPids(t, cmd.Process.Pid)
				cmd.Process.Kill()
				cmd.Wait()
				for _, pid := range workers {
					// Polling /proc: no event reaches us from a grandchild.
					for alive := time.Now(); syscall.Kill(pid, 0) == nil && !zombie(pid); time.Sleep(10 * time.Millisecond) {
						if time.Since(alive) > 5*time.Second {
							t.Fatalf("%s: worker %d still runs 5 s after its driver was killed", what, pid)
						}
					}
				}
				job := jobURLOf(t, errb.String())
				r := sluice(t, env, "run", "--sim", sim, "--workers", "4", "--attempts", "6", "--resume", job)
				if r.code != 0 || r.stdout != want.stdout {
					t.Fatalf("%s: resumed %s: exit %d: %s\ngot %d bytes, want %d", what, job, r.code, r.stderr, len(r.stdout), len(want.stdout))
				}
			} else {
				err := cmd.Wait()
				close(stop)
				wg.Wait()
				if err != nil || out.String() != want.stdout {
					t.Fatalf("%s, killed workers %v: %v: %s\ngot %d bytes, want %d", what, killed, err, errb.String(), out.Len(), len(want.stdout))
				}
			}
			if left := tg.left(t); len(left) != 0 {
				t.Fatalf("%s: objects left: %q", what, left)
			}
			if r := sluice(t, tg.env, "uploads", tg.jobs); r.code != 0 || strings.TrimSpace(r.stdout) != "" {
				t.Fatalf("%s: unfinished uploads (exit %d): %s %s", what, r.code, r.stdout, r.stderr)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				var names []string
				for _, e := range ents {
					names = append(names, filepath.Join(tmp, e.Name()))
				}
				t.Fatalf("%s: files left in TMPDIR: %q", what, names)
			}
			t.Logf("%s: killed workers %v, driver killed and resumed: %v; identical, nothing left", what, killed, killDriver)
		}
	}
}

// jobURLOf is the job's URL from the line a fanned-out run starts with.
func jobURLOf(t *testing.T, stderr string) string {
	t.Helper()
	first, _, _ := strings.Cut(stderr, "\n")
	job, ok := strings.CutPrefix(first, "sluice: job ")
	if !ok {
		t.Fatalf("no job line in %q", stderr)
	}
	job, _, _ = strings.Cut(job, " ")
	return job
}
