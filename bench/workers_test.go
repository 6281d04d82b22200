package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

// inProcess runs each worker as Run in this process, every worker behind a
// link of its own over one shared store: what the CLI's child processes
// do, without the processes.
type inProcess struct {
	inner   store.Driver
	profile sim.Profile
	cfg     Config
	// die makes this worker index stop after its puts without cleaning
	// up, as a killed process would (-1: none).
	die int
}

// Launch runs every worker at once; the first to fail stops the others
// (their ctx ends) and is the error.
func (l *inProcess) Launch(ctx context.Context, ws []WorkerSpec) ([][]Record, error) {
	perProc := make([][]Record, len(ws))
	g, gctx := errgroup.WithContext(ctx)
	for i, w := range ws {
		g.Go(func() error {
			recs, err := l.launch(gctx, w)
			perProc[i] = recs
			return err
		})
	}
	return perProc, g.Wait()
}

func (l *inProcess) launch(ctx context.Context, w WorkerSpec) ([]Record, error) {
	st := store.New(sim.Wrap(l.inner, l.profile), "mem://bench-test/")
	cfg := l.cfg
	cfg.Start, cfg.Seed = w.Start, uint64(w.Index+1)
	if w.Index == l.die {
		cfg.Keep, cfg.WriteOnly = true, true
	}
	if w.URL != "mem://bench-test/" {
		return nil, errors.New("not the driver's store: " + w.URL)
	}
	res, err := Run(ctx, st, w.Prefix, cfg)
	if err == nil && w.Index == l.die {
		err = errors.New("worker killed")
	}
	return res.Records, err
}

func TestRunWorkers(t *testing.T) {
	st, inner := memStore(t)
	putRaw(t, st, "scratch/theirs", 1)
	launch := &inProcess{inner: inner, profile: mustProfile(t, "ttfb=1ms,link=64MiB/s"), die: -1,
		cfg: Config{Sizes: []int64{256 << 10}, Concurrency: []int{2}, Objects: 4}}
	var heard int
	res, err := RunWorkers(testCtx(t), st, "scratch/", WorkersConfig{Workers: []int{1, 2, 3}, Rounds: 2,
		Progress: func(WorkersRun) { heard++ }}, launch)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 6 || heard != 6 {
		t.Fatalf("%d runs, %d heard; want 6", len(res.Runs), heard)
	}
	cells := map[int]int{}
	for _, r := range res.Records {
		cells[r.Cell]++
		if r.Processes != res.Runs[r.Cell].Workers || r.Process >= r.Processes || r.Start < 0 || r.LastByte < r.Start || !r.OK() {
			t.Fatalf("record %+v in a run of %d", r, res.Runs[r.Cell].Workers)
		}
	}
	for i, run := range res.Runs {
		k := run.Workers
		if run.Cell != i || run.Round != i/3 || k != []int{1, 2, 3}[i%3] {
			t.Errorf("run %d: %+v", i, run)
		}
		// Every worker puts and gets its 4 objects.
		if cells[i] != k*8 || run.Put.Objects != k*4 || run.Get.Objects != k*4 || len(run.PerWorkerGet) != k {
			t.Errorf("run %d of %d workers: %d records, %d/%d objects, %d per-worker figures", i, k, cells[i], run.Put.Objects, run.Get.Objects, len(run.PerWorkerGet))
		}
		if run.Get.SteadyMiBps <= 0 || run.Put.SteadyMiBps <= 0 {
			t.Errorf("run %d: no throughput: %+v", i, run)
		}
	}
	if len(res.Scaling) != 3 {
		t.Fatalf("scaling %+v", res.Scaling)
	}
	for i, s := range res.Scaling {
		if s.Workers != i+1 || s.Base != 1 || s.Ideal != float64(i+1) || s.GetRatio <= 0 || s.PutRatio <= 0 {
			t.Errorf("scaling %+v", s)
		}
	}
	if res.Scaling[0].GetRatio != 1 || res.Scaling[0].PutRatio != 1 {
		t.Errorf("one worker against itself: %+v", res.Scaling[0])
	}
	if left := keys(t, st, ""); len(left) != 1 || left[0] != "scratch/theirs" {
		t.Errorf("left behind: %v", left)
	}
	var rep bytes.Buffer
	if err := WriteWorkersReport(&rep, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"per worker", "min/p50/max", "scaling (medians over 2 round(s)", "put/ideal"} {
		if !strings.Contains(rep.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, rep.String())
		}
	}
}

// A worker that dies leaves its objects; the run fails with its error and
// the driver deletes what it left.
func TestRunWorkersDeadWorker(t *testing.T) {
	st, inner := memStore(t)
	launch := &inProcess{inner: inner, profile: mustProfile(t, "ttfb=1ms"), die: 1,
		cfg: Config{Sizes: []int64{64 << 10}, Concurrency: []int{2}, Objects: 4}}
	res, err := RunWorkers(testCtx(t), st, "", WorkersConfig{Workers: []int{2, 4}}, launch)
	if err == nil || !strings.Contains(err.Error(), "worker killed") {
		t.Fatalf("err = %v, want the dead worker's", err)
	}
	if len(res.Runs) != 1 || res.Runs[0].Err == "" {
		t.Errorf("runs %+v: want the first run, failed", res.Runs)
	}
	if left := keys(t, st, ""); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestRunWorkersCancelled(t *testing.T) {
	st, inner := memStore(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	launch := &inProcess{inner: inner, profile: mustProfile(t, "link=16MiB/s"), die: -1,
		cfg: Config{Sizes: []int64{1 << 20}, Concurrency: []int{2}, Objects: 16, Observer: &cancelOnBytes{cancel: cancel}}}
	_, err := RunWorkers(ctx, st, "", WorkersConfig{Workers: []int{2}}, launch)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
	if left := keys(t, st, ""); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestWorkersConfigValidate(t *testing.T) {
	one := Config{Sizes: []int64{1 << 20}, Concurrency: []int{2}}
	for _, c := range []struct {
		cfg  WorkersConfig
		want string
	}{
		{WorkersConfig{Workers: []int{1, 2}, Worker: one}, ""},
		{WorkersConfig{Workers: []int{1}}, ""}, // a Launcher of its own tells its workers
		{WorkersConfig{}, "no worker count given"},
		{WorkersConfig{Workers: []int{0}}, "workers must be in 1..1024, got 0"},
		{WorkersConfig{Workers: []int{1, 5000}}, "workers must be in 1..1024, got 5000"},
		{WorkersConfig{Workers: []int{1}, Rounds: -1}, "rounds and start delay must not be negative"},
		{WorkersConfig{Workers: []int{1}, StartDelay: -1}, "rounds and start delay must not be negative"},
		{WorkersConfig{Workers: []int{1}, Worker: Config{ReadOnly: true, Concurrency: []int{2}}}, "workers write what they read: read-only does not apply"},
		{WorkersConfig{Workers: []int{1}, Worker: Config{Sizes: []int64{1, 2}, Concurrency: []int{2}}}, "a worker runs one object size at one concurrency"},
		{WorkersConfig{Workers: []int{1}, Worker: Config{Sizes: []int64{1}, Concurrency: []int{1, 2}}}, "a worker runs one object size at one concurrency"},
		{WorkersConfig{Workers: []int{1}, Worker: Config{Sizes: []int64{1}, Auto: true}}, "a worker runs one object size at one concurrency"},
	} {
		if got := errText(c.cfg.Validate()); got != c.want {
			t.Errorf("Validate(%+v) = %q, want %q", c.cfg, got, c.want)
		}
	}
}

func mustProfile(t *testing.T, spec string) sim.Profile {
	t.Helper()
	p, err := sim.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
