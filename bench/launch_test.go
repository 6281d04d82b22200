package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/fanout"
)

// fakeArray runs a whole run's workers as one array: each worker's
// records are there at the end, index fail fails every attempt with
// failure.
type fakeArray struct {
	fail    int
	failure string
	arrays  []fanout.PhaseRun
}

func (f *fakeArray) RunPhase(ctx context.Context, a fanout.PhaseRun) error {
	f.arrays = append(f.arrays, a)
	if f.fail >= 0 && f.fail < a.Tasks {
		return &fanout.TaskError{Task: f.fail, Worker: "pod w-2", Attempts: 1, Err: f.failure}
	}
	return nil
}

func specsOf(k int) []WorkerSpec {
	ws := make([]WorkerSpec, k)
	run := fmt.Sprintf("r0-k%d/", k)
	for i := range ws {
		ws[i] = WorkerSpec{Index: i, Count: k, URL: "s3://b/", Run: run, Prefix: WorkerPrefix(run, i)}
	}
	return ws
}

// TestExecLauncher: a run's workers are one phase of as many tasks, run
// once each, all at once, with the same arguments; each worker's records
// are read back, also after a failure, which names the worker and its
// last line.
func TestExecLauncher(t *testing.T) {
	exe := &fakeArray{fail: -1}
	l := &ExecLauncher{
		Exe:  exe,
		Args: func(w WorkerSpec) []string { return []string{"bench", w.URL, "--worker-prefix", w.Run} },
		Records: func(w WorkerSpec) ([]Record, error) {
			return []Record{{Worker: w.Index, Key: w.Prefix}}, nil
		},
	}
	recs, err := l.Launch(context.Background(), specsOf(3))
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d workers' records, %v", len(recs), err)
	}
	for i, r := range recs {
		if len(r) != 1 || r[0].Worker != i || r[0].Key != fmt.Sprintf("r0-k3/w%03d/", i) {
			t.Errorf("worker %d: records %+v", i, r)
		}
	}
	a := exe.arrays[0]
	if a.Tasks != 3 || a.Workers != 3 || a.Attempts != 1 || a.Phase != 0 || !strings.HasPrefix(a.Job, "bench-") ||
		strings.Join(a.Args(), " ") != "bench s3://b/ --worker-prefix r0-k3/" {
		t.Errorf("array %+v, args %q", a, a.Args())
	}
	exe.fail, exe.failure = 2, "exit code 1: no space left on device"
	recs, err = l.Launch(context.Background(), specsOf(4))
	if err == nil || err.Error() != "worker 2 of 4 (pod w-2): exit code 1: no space left on device" || len(recs) != 4 || len(recs[3]) != 1 {
		t.Fatalf("failed run: %v, %d workers' records", err, len(recs))
	}
	if b := exe.arrays[1]; b.Phase != 1 || b.Job != a.Job || b.Name() == a.Name() {
		t.Errorf("second run's array %q (phase %d) against the first's %q", b.Name(), b.Phase, a.Name())
	}
	// A process's exit status gives way to the last line it logged.
	exe.failure = "exit status 1: bench: put: permission denied"
	if _, err = l.Launch(context.Background(), specsOf(3)); err == nil || err.Error() != "worker 2 of 3 (pod w-2): bench: put: permission denied" {
		t.Errorf("failed process: %v", err)
	}
	// A cancelled run's error is the cancellation, not what the executor
	// made of it.
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("interrupted")
	cancel(cause)
	if _, err = l.Launch(ctx, specsOf(3)); !errors.Is(err, cause) {
		t.Errorf("cancelled run: %v", err)
	}
}

// The local executor's workers are processes of this test binary
// (TestMain runs testWorker when benchTestWorker is set): each counts its
// starts, waits until every worker of its run has started (at most 20 s),
// then ends as its arguments say: with records, by failing, or by
// waiting for an interrupt and cleaning up.
const benchTestWorker = "SLUICE_BENCH_TEST_WORKER"

// testWorker is a worker process: args are dir, the run's worker count,
// the index that fails (-1: none), the index that is slow, and "hang"
// when the others wait to be interrupted.
func testWorker(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir := args[0]
	k, _ := strconv.Atoi(args[1])
	fail, _ := strconv.Atoi(args[2])
	slow, _ := strconv.Atoi(args[3])
	hang := args[4] == "hang"
	i, err := strconv.Atoi(os.Getenv("JOB_COMPLETION_INDEX"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "no index")
		return 2
	}
	at := func(name string) string { return filepath.Join(dir, fmt.Sprintf("%s-%d", name, i)) }
	f, err := os.OpenFile(at("starts"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 2
	}
	fmt.Fprintln(f, strings.Join(args, " "))
	f.Close()
	// Polling the files the other workers write: no event reaches us.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		starts, _ := filepath.Glob(filepath.Join(dir, "starts-*"))
		if len(starts) == k {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "sluice: %d of %d workers started\n", len(starts), k)
			return 1
		}
	}
	switch {
	case i == fail:
		fmt.Fprintln(os.Stderr, "a line before the last")
		fmt.Fprintln(os.Stderr, "sluice: bench: no space left on device")
		return 1
	case hang:
		<-ctx.Done()
		os.WriteFile(at("cleaned"), nil, 0o644)
		return 130
	case i == slow:
		time.Sleep(1200 * time.Millisecond) // the straggler's slowness is the input
	}
	if err := os.WriteFile(at("records"), nil, 0o644); err != nil {
		return 2
	}
	return 0
}

// TestExecLauncherLocal runs workers as processes through fanout.Local:
// all of a run's at once, each once (a slow one gets no duplicate); a
// failed one stops the others, which clean up, and is named with its last
// line; Ctrl-C interrupts every worker, and each cleans up.
func TestExecLauncherLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	launcher := func(dir string, fail, slow int, hang bool) *ExecLauncher {
		exe := fanout.NewLocal([]string{self})
		exe.Env = []string{benchTestWorker + "=1"}
		exe.Grace = 10 * time.Second
		mode := "run"
		if hang {
			mode = "hang"
		}
		return &ExecLauncher{
			Exe: exe,
			Args: func(w WorkerSpec) []string {
				return []string{dir, strconv.Itoa(w.Count), strconv.Itoa(fail), strconv.Itoa(slow), mode}
			},
			Records: func(w WorkerSpec) ([]Record, error) {
				if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("records-%d", w.Index))); err != nil {
					return nil, nil
				}
				return []Record{{Worker: w.Index}}, nil
			},
		}
	}
	exists := func(dir, name string, i int) bool {
		_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%s-%d", name, i)))
		return err == nil
	}

	t.Run("together and once", func(t *testing.T) {
		dir := t.TempDir()
		l := launcher(dir, -1, 2, false)
		var reports []fanout.Progress
		l.Progress = func(p fanout.Progress) { reports = append(reports, p) }
		recs, err := l.Launch(testCtx(t), specsOf(3))
		if err != nil {
			t.Fatal(err)
		}
		// The run's progress, from three running to three done.
		if len(reports) == 0 || reports[len(reports)-1] != (fanout.Progress{Index: 0, Phase: "bench", Tasks: 3, Done: 3}) || !slices.ContainsFunc(reports, func(p fanout.Progress) bool { return p.Running == 3 }) {
			t.Errorf("progress reports %+v", reports)
		}
		for i := range 3 {
			if len(recs[i]) != 1 || recs[i][0].Worker != i {
				t.Errorf("worker %d: records %+v", i, recs[i])
			}
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("starts-%d", i)))
			if got := strings.TrimSpace(string(b)); got != dir+" 3 -1 2 run" {
				t.Errorf("worker %d started as %q, want once with the run's arguments", i, got)
			}
		}
	})

	t.Run("a failure stops the others", func(t *testing.T) {
		dir := t.TempDir()
		recs, err := launcher(dir, 1, -1, true).Launch(testCtx(t), specsOf(3))
		if err == nil || !regexp.MustCompile(`^worker 1 of 3 \(pid \d+\): bench: no space left on device$`).MatchString(err.Error()) {
			t.Fatalf("err = %v", err)
		}
		if len(recs) != 3 {
			t.Errorf("%d workers' records", len(recs))
		}
		for _, i := range []int{0, 2} {
			if !exists(dir, "cleaned", i) {
				t.Errorf("worker %d was not interrupted (so did not clean up)", i)
			}
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		go func() {
			for ctx.Err() == nil {
				if starts, _ := filepath.Glob(filepath.Join(dir, "starts-*")); len(starts) == 2 {
					cancel()
					return
				}
				time.Sleep(10 * time.Millisecond) // polling the files the workers write
			}
		}()
		_, err := launcher(dir, -1, -1, true).Launch(ctx, specsOf(2))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want canceled", err)
		}
		if i := slices.IndexFunc([]int{0, 1}, func(i int) bool { return !exists(dir, "cleaned", i) }); i >= 0 {
			t.Errorf("worker %d was not interrupted (so did not clean up)", i)
		}
	})
}

// TestNewExecLauncher: the workers' records go under the run's prefix of
// the store, or, for a mem:// store, to a temporary directory only a local
// executor's workers reach; a local executor runs them all at once and
// gives them time to clean up.
func TestNewExecLauncher(t *testing.T) {
	w := WorkerSpec{URL: "s3://b/", Run: "run-1/"}
	var got string
	args := func(_ WorkerSpec, records string) []string { got = records; return nil }
	l, cleanup, err := NewExecLauncher(&fakeArray{fail: -1}, "s3://b/", nil, args)
	if err != nil {
		t.Fatal(err)
	}
	cleanup()
	if l.Args(w); got != "s3://b/run-1/records/" {
		t.Errorf("records at %q", got)
	}
	if _, _, err := NewExecLauncher(&fakeArray{fail: -1}, "mem://b/", nil, args); !errors.Is(err, ErrUnreachable) {
		t.Errorf("a mem:// store for a cluster's workers: %v", err)
	}
	local := fanout.NewLocal(nil)
	l, cleanup, err = NewExecLauncher(local, "mem://b/", nil, args)
	if err != nil {
		t.Fatal(err)
	}
	if l.Args(w); !strings.HasPrefix(got, "file://") || !strings.HasSuffix(got, "/run-1/records/") {
		t.Errorf("mem:// records at %q", got)
	}
	dir := strings.TrimSuffix(strings.TrimPrefix(got, "file://"), "run-1/records/")
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("temporary directory: %v", err)
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s: %v", dir, err)
	}
	if local.Grace != WorkerGrace || local.Limit != -1 {
		t.Errorf("local executor: grace %v, limit %d", local.Grace, local.Limit)
	}
}
