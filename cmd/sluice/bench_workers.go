package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/sluice-data/sluice/bench"
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
	case opts.exe.DryRun:
		return usagef("bench: --dry-run is sluice run's; bench submits its workers to measure them")
	case opts.startDelay < 0:
		return usagef("bench: --start-delay must not be negative, got %v", opts.startDelay)
	}
	wcfg := bench.WorkersConfig{Rounds: opts.runs, Keep: opts.keep, StartDelay: opts.startDelay, Worker: cfg}
	var ok bool
	if wcfg.Workers, ok = ints(opts.workers, 0); !ok {
		return usagef("bench: --workers %q: want positive numbers such as 1,2,4", opts.workers)
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

// openRecords opens where the workers' records go, without --sim's link:
// they are bookkeeping, not what is measured.
func openRecords(ctx context.Context, url string) (*store.Store, string, error) {
	return globals.open(ctx, url, store.Options{Endpoint: globals.endpoint, Region: globals.region})
}

// newBenchWorkers runs each run's workers as one phase of the executor
// --executor names, as sluice run --workers runs a phase's tasks: `sluice
// bench URL` with the parent's flags (so each its own --sim link), told
// the run's prefix, when to start and where to leave its records.
func newBenchWorkers(opts benchOptions, cfg bench.Config, st *store.Store) (*bench.ExecLauncher, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	exe, err := opts.exe.executor(self, nil)
	if err != nil {
		return nil, nil, err
	}
	shared := []string{"-q", "-n", strconv.Itoa(opts.objects), "--size", bench.FormatSize(cfg.Sizes[0]),
		"-c", strconv.Itoa(cfg.Concurrency[0]), "--retries", strconv.Itoa(opts.retries), "--prefixes", strconv.Itoa(opts.prefixes),
		"--seed", strconv.FormatUint(opts.seed, 10)}
	if opts.writeOnly {
		shared = append(shared, "--write-only")
	}
	if opts.keep {
		shared = append(shared, "--keep")
	}
	if opts.rangeSize != "" {
		shared = append(shared, "--range-size", opts.rangeSize)
	}
	if opts.parts > 0 {
		shared = append(shared, "--parts", strconv.Itoa(opts.parts))
	}
	shared = append(shared, globals.args()...)
	l, cleanup, err := bench.NewExecLauncher(exe, st.URL(""), openRecords, func(w bench.WorkerSpec, records string) []string {
		return append([]string{"bench", w.URL, "--worker-prefix", w.Run, "--worker-records", records,
			"--worker-start", strconv.FormatInt(w.Start.UnixNano(), 10)}, shared...)
	})
	if errors.Is(err, bench.ErrUnreachable) {
		return nil, nil, usagef("bench: --executor %s: %v", opts.exe.Name, err)
	}
	return l, cleanup, err
}
