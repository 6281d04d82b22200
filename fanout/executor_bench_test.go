package fanout_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/kubernetes"
	"github.com/sluice-data/sluice/fanout/slurm"
	"github.com/sluice-data/sluice/internal/testkubelet"
)

// BenchmarkExecutorStartup measures each executor's own cost, with
// tasks that do nothing but note when they started (a shell command, not
// a worker):
//
//   - s-to-16-running: from submitting 16 tasks with 16 workers (each
//     sleeping 3s, so they overlap) until the last of them has started;
//   - ms/task: the time of 16 empty tasks one at a time (1 worker),
//     divided by 16: what starting, ending and noticing a task costs.
//
// Both are the median of the b.N runs; run it as
//
//	./scripts/test -run '^$' -bench ExecutorStartup -benchtime 3x ./fanout
//
// (slurm needs a Slurm, as root ./scripts/test starts one; kubernetes
// the control plane of SLUICE_TEST_KUBECONFIG; each is skipped without).
func BenchmarkExecutorStartup(b *testing.B) {
	for _, name := range []string{"local", "slurm", "kubernetes"} {
		b.Run(name, func(b *testing.B) {
			var mk func(command []string) fanout.Executor
			switch name {
			case "local":
				mk = func(command []string) fanout.Executor { return fanout.NewLocal(command) }
			case "slurm":
				if exec.Command("sinfo", "-h").Run() != nil {
					b.Skip("no Slurm answers (as root, scripts/slurm-up starts one)")
				}
				mk = func(command []string) fanout.Executor { return slurm.New(command) }
			case "kubernetes":
				kc := os.Getenv("SLUICE_TEST_KUBECONFIG")
				if kc == "" {
					b.Skip("SLUICE_TEST_KUBECONFIG not set (./scripts/test starts a control plane under CI or with SLUICE_TEST_K8S=1)")
				}
				_, ns := testkubelet.ForTest(b, kc, "sluice-bench-", testkubelet.Options{})
				cfg, err := clientcmd.BuildConfigFromFlags("", kc)
				if err != nil {
					b.Fatal(err)
				}
				api, err := kubernetes.NewAPI(cfg)
				if err != nil {
					b.Fatal(err)
				}
				mk = func(command []string) fanout.Executor {
					return &kubernetes.Executor{Client: api, Namespace: ns, Image: "none", Command: command}
				}
			}
			var all, per []float64
			for i := 0; i < b.N; i++ {
				all = append(all, startup(b, mk, 16, 16, 3*time.Second).Seconds())
				dir := b.TempDir()
				t0 := time.Now()
				runTasks(b, mk(noteStart(dir, 0)), fmt.Sprintf("o%d%d", i, t0.UnixNano()%1e6), 16, 1)
				per = append(per, float64(time.Since(t0).Milliseconds())/16)
			}
			b.ReportMetric(median(all), "s-to-16-running")
			b.ReportMetric(median(per), "ms/task")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// noteStart is a task that writes the time it started into dir and
// sleeps for sleep.
func noteStart(dir string, sleep time.Duration) []string {
	return []string{"/bin/sh", "-c", fmt.Sprintf(`i=${JOB_COMPLETION_INDEX:-$SLURM_ARRAY_TASK_ID}; date +%%s%%N > %s/start-$i; sleep %g`,
		dir, sleep.Seconds())}
}

// startup runs tasks tasks over workers workers and returns how long
// after the submission the last one started.
func startup(b *testing.B, mk func([]string) fanout.Executor, tasks, workers int, sleep time.Duration) time.Duration {
	dir := b.TempDir()
	t0 := time.Now()
	runTasks(b, mk(noteStart(dir, sleep)), "s"+strconv.FormatInt(t0.UnixNano()%1e6, 10), tasks, workers)
	var last time.Time
	for i := range tasks {
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("start-%d", i)))
		if err != nil {
			b.Fatalf("task %d: %v", i, err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		if at := time.Unix(0, ns); at.After(last) {
			last = at
		}
	}
	return last.Sub(t0)
}

// runTasks runs the tasks with an executor, at most workers at once.
func runTasks(b *testing.B, e fanout.Executor, job string, tasks, workers int) {
	r := fanout.PhaseRun{Job: "job-bench" + job, Spec: "spec", Tasks: tasks, Workers: workers, Attempts: 1, Kind: fanout.PhaseMap}
	if err := e.RunPhase(context.Background(), r); err != nil {
		b.Fatal(err)
	}
}
