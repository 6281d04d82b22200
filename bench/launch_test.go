package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-data/sluice/fanout"
)

// fakeExecutor runs each worker as a goroutine that ends at once: with
// an error for index fail, never for index hang (until Stop).
type fakeExecutor struct {
	exits      chan fanout.Exit
	fail, hang int
	mu         sync.Mutex
	args       map[int][]string
	stops      atomic.Int32
	stop       chan struct{}
}

func (f *fakeExecutor) Start(ctx context.Context, t fanout.Task) error {
	f.mu.Lock()
	f.args[t.Index] = t.Args
	f.mu.Unlock()
	go func() {
		switch t.Index {
		case f.hang:
			<-f.stop
			return // a stopped worker's exit is not reported
		case f.fail:
			f.exits <- fanout.Exit{Task: t, Worker: "fake", Err: errors.New("exit status 1: no space left on device")}
		default:
			f.exits <- fanout.Exit{Task: t, Worker: "fake"}
		}
	}()
	return nil
}

func (f *fakeExecutor) Exits() <-chan fanout.Exit { return f.exits }

// RunPhase is not how ExecLauncher uses an executor that starts workers
// one by one.
func (f *fakeExecutor) RunPhase(ctx context.Context, r fanout.PhaseRun) error {
	return errors.New("fakeExecutor starts workers one by one")
}

func (f *fakeExecutor) Stop() error {
	if f.stops.Add(1) == 1 {
		close(f.stop)
	}
	return nil
}

func TestExecLauncher(t *testing.T) {
	exe := &fakeExecutor{exits: make(chan fanout.Exit), fail: 2, hang: -1, args: map[int][]string{}, stop: make(chan struct{})}
	l := &ExecLauncher{
		Exe:  exe,
		Args: func(w WorkerSpec) []string { return []string{"bench", w.URL, fmt.Sprint("--worker-prefix=", w.Prefix)} },
		Records: func(w WorkerSpec) ([]Record, error) {
			return []Record{{Worker: w.Index, Key: w.Prefix}}, nil
		},
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	}()
	// Four at once: each gets its own worker's records, the failing one
	// its worker's last line, named.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	recs := make([][]Record, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs[i], errs[i] = l.Launch(context.Background(), WorkerSpec{Index: i, Count: 4, URL: "mem://b/", Prefix: fmt.Sprintf("w%d/", i)})
		}()
	}
	wg.Wait()
	for i := range 4 {
		if len(recs[i]) != 1 || recs[i][0].Worker != i || recs[i][0].Key != fmt.Sprintf("w%d/", i) {
			t.Errorf("worker %d: records %+v", i, recs[i])
		}
		if got := strings.Join(exe.args[i], " "); got != fmt.Sprintf("bench mem://b/ --worker-prefix=w%d/", i) {
			t.Errorf("worker %d started with %q", i, got)
		}
		if i == 2 {
			if errs[i] == nil || errs[i].Error() != "worker 2 of 4: no space left on device" {
				t.Errorf("failing worker: %v", errs[i])
			}
		} else if errs[i] != nil {
			t.Errorf("worker %d: %v", i, errs[i])
		}
	}
	// A cancelled run stops the executor and returns what was recorded.
	exe.hang = 5
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	rs, err := l.Launch(ctx, WorkerSpec{Index: 5, Count: 6, URL: "mem://b/", Prefix: "w5/"})
	if !errors.Is(ctx.Err(), context.Canceled) || err == nil || !strings.Contains(err.Error(), "worker 5 of 6: context canceled") || len(rs) != 1 {
		t.Fatalf("cancelled: %v, %d records", err, len(rs))
	}
	if exe.stops.Load() == 0 {
		t.Fatal("the executor was not stopped")
	}
}

// fakeArray runs a whole run's workers as one array: each worker's
// records are there at the end, index fail fails every attempt.
type fakeArray struct {
	fail   int
	arrays []fanout.PhaseRun
}

func (f *fakeArray) RunPhase(ctx context.Context, a fanout.PhaseRun) error {
	f.arrays = append(f.arrays, a)
	if f.fail >= 0 && f.fail < a.Tasks {
		return &fanout.TaskError{Task: f.fail, Worker: "pod w-2", Attempts: 1, Err: "exit code 1: no space left on device"}
	}
	return nil
}

// TestExecLauncherArray: through an executor of whole phases a run's workers are
// one array of as many tasks, run once each, all at once, with the same
// arguments; each worker's records are read back, also after a failure,
// which names the worker and its last lines.
func TestExecLauncherArray(t *testing.T) {
	exe := &fakeArray{fail: -1}
	l := &ExecLauncher{
		Exe:  exe,
		Args: func(w WorkerSpec) []string { return []string{"bench", w.URL, "--worker-prefix", w.Run} },
		Records: func(w WorkerSpec) ([]Record, error) {
			return []Record{{Worker: w.Index, Key: w.Prefix}}, nil
		},
	}
	specs := func(k int) []WorkerSpec {
		ws := make([]WorkerSpec, k)
		for i := range ws {
			ws[i] = WorkerSpec{Index: i, Count: k, URL: "s3://b/", Run: "r0-k3/", Prefix: WorkerPrefix("r0-k3/", i)}
		}
		return ws
	}
	recs, err := l.LaunchGroup(context.Background(), specs(3))
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
	exe.fail = 2
	recs, err = l.LaunchGroup(context.Background(), specs(4))
	if err == nil || err.Error() != "worker 2 of 4 (pod w-2): exit code 1: no space left on device" || len(recs) != 4 || len(recs[3]) != 1 {
		t.Fatalf("failed run: %v, %d workers' records", err, len(recs))
	}
	if b := exe.arrays[1]; b.Phase != 1 || b.Job != a.Job || b.Name() == a.Name() {
		t.Errorf("second run's array %q (phase %d) against the first's %q", b.Name(), b.Phase, a.Name())
	}
}
