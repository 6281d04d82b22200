package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/internal/progress"
	"github.com/sluice-data/sluice/internal/stdio"
	"github.com/sluice-data/sluice/store"
)

// runBenchWorkers is `sluice bench --workers`: the same benchmark from
// worker processes of this binary at once, each behind its own --sim link.
func runBenchWorkers(ctx context.Context, out io.Writer, opts benchOptions, url string, sizeGiven bool) error {
	cfg, conc, err := benchConfig(opts, sizeGiven)
	if err != nil {
		return err
	}
	switch {
	case cfg.ReadOnly:
		return usagef("bench: --workers writes what it reads; --read-only does not apply")
	case cfg.Auto || len(cfg.Concurrency) != 1 || len(cfg.Sizes) != 1:
		return usagef("bench: --workers takes one --size and one --concurrency (the workers are what it sweeps)")
	case opts.runs < 1:
		return usagef("bench: --runs must be at least 1, got %d", opts.runs)
	case opts.exe.dryRun:
		return usagef("bench: --dry-run is sluice run's; bench submits its workers to measure them")
	case opts.startDelay < 0:
		return usagef("bench: --start-delay must not be negative, got %v", opts.startDelay)
	}
	wcfg := bench.WorkersConfig{Rounds: opts.runs, Keep: opts.keep, StartDelay: opts.startDelay, Worker: cfg}
	for _, s := range strings.Split(opts.workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return usagef("bench: --workers %q: want positive numbers such as 1,2,4", opts.workers)
		}
		wcfg.Workers = append(wcfg.Workers, n)
	}
	if err := wcfg.Validate(); err != nil {
		return usagef("bench: --workers: %v", err)
	}
	if err := checkBenchOutputs(opts); err != nil {
		return err
	}
	st, prefix, err := globals.openStore(ctx, url, conc)
	if err != nil {
		return err
	}
	defer st.Close()
	launch, cleanup, err := newBenchWorkers(opts, cfg, st)
	if err != nil {
		return err
	}
	defer cleanup()
	if opts.progress && !opts.quiet && stdio.IsTerminal(os.Stderr) {
		// A bar a run: its workers started, running, done.
		bars := progress.NewJob(os.Stderr)
		launch.Progress = bars.Update
		defer bars.Close()
	}
	if !opts.quiet {
		wcfg.Progress = func(r bench.WorkersRun) {
			fmt.Fprintf(os.Stderr, "round %d, %d worker(s): put %.1f MiB/s, get %.1f MiB/s aggregate\n",
				r.Round+1, r.Workers, r.Put.SteadyMiBps, r.Get.SteadyMiBps)
		}
	}
	return bench.RunWorkersReport(ctx, st, prefix, wcfg, launch, benchOutput(out, opts))
}

// runBenchWorker is one worker process: the benchmark under its own
// prefix of the run's, runPrefix (from its index in the environment, as every
// executor gives it) from the shared start, its records to the prefix it
// was given, nothing else.
func runBenchWorker(ctx context.Context, st *store.Store, runPrefix string, cfg bench.Config, opts benchOptions) error {
	index, err := envTaskIndex()
	if err != nil {
		return usagef("bench worker: %v", err)
	}
	rs, rprefix, err := openRecords(ctx, opts.workerRecords)
	if err != nil {
		return err
	}
	defer rs.Close()
	cfg.Start = time.Unix(0, opts.workerStart)
	return bench.RunWorker(ctx, st, runPrefix, index, cfg, rs, rprefix)
}

// openRecords opens where the workers' records go, without --sim's link:
// they are bookkeeping, not what is measured.
func openRecords(ctx context.Context, url string) (*store.Store, string, error) {
	return globals.open(ctx, url, store.Options{Endpoint: globals.endpoint, Region: globals.region})
}

// newBenchWorkers runs each run's workers as one phase of the executor
// --executor names, as sluice run --workers runs a phase's tasks: `sluice
// bench URL` with the parent's flags (so each its own --sim link), told
// the run's prefix, when to start and where to leave its records, its
// index from the executor. Locally, stopping (a failed worker, Ctrl-C)
// interrupts the workers, so each deletes what it wrote, and kills only
// those still running after workerWait; Slurm and Kubernetes stop theirs
// as they do.
func newBenchWorkers(opts benchOptions, cfg bench.Config, st *store.Store) (*bench.ExecLauncher, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	// The workers leave their records in the store, under the run's
	// prefix; a mem:// store lives in each process, so they go to a
	// temporary directory instead.
	records := func(w bench.WorkerSpec) string { return w.URL + w.Run + "records/" }
	cleanup := func() {}
	if strings.HasPrefix(st.URL(""), "mem://") {
		if opts.exe.name != "local" {
			return nil, nil, usagef("bench: --executor %s: the workers need a store they reach; %s lives in each process", opts.exe.name, st.URL(""))
		}
		dir, err := os.MkdirTemp("", "sluice-bench-workers-")
		if err != nil {
			return nil, nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		root := "file://" + filepath.ToSlash(dir) + "/"
		records = func(w bench.WorkerSpec) string { return root + w.Run + "records/" }
	}
	exe, err := opts.exe.executor(self, nil)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	if l, ok := exe.(*fanout.Local); ok {
		l.Grace = workerWait
		l.Limit = -1 // a run's workers all at once, as it measures them
	}
	shared := []string{"-q", "-n", strconv.Itoa(opts.objects), "--size", bench.FormatSize(cfg.Sizes[0]),
		"-c", strconv.Itoa(cfg.Concurrency[0]), "--retries", strconv.Itoa(opts.retries), "--prefixes", strconv.Itoa(opts.prefixes)}
	if opts.rangeSize != "" {
		shared = append(shared, "--range-size", opts.rangeSize)
	}
	if opts.parts > 0 {
		shared = append(shared, "--parts", strconv.Itoa(opts.parts))
	}
	if opts.writeOnly {
		shared = append(shared, "--write-only")
	}
	if opts.keep {
		shared = append(shared, "--keep")
	}
	shared = append(shared, globals.args()...)
	l := &bench.ExecLauncher{
		Exe: exe,
		Args: func(w bench.WorkerSpec) []string {
			return append([]string{"bench", w.URL, "--worker-prefix", w.Run, "--worker-records", records(w),
				"--worker-start", strconv.FormatInt(w.Start.UnixNano(), 10),
				"--seed", strconv.FormatUint(opts.seed, 10)}, shared...)
		},
		Records: func(w bench.WorkerSpec) ([]bench.Record, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rs, prefix, err := openRecords(ctx, records(w))
			if err != nil {
				return nil, err
			}
			defer rs.Close()
			return bench.WorkerRecords(ctx, rs, prefix, w.Index)
		},
	}
	return l, cleanup, nil
}

// workerWait bounds how long a stopped worker gets to delete what it
// wrote before it is killed (bench's own cleanup is bounded at 2 minutes).
const workerWait = 150 * time.Second
