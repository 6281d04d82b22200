package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/internal/progress"
	"github.com/sluice-data/sluice/internal/stdio"
	"github.com/sluice-data/sluice/store"
)

// runBenchWorkers is `sluice bench --workers`: the same benchmark from
// worker processes of this binary at once, each behind its own --sim link.
func runBenchWorkers(ctx context.Context, out io.Writer, opts benchOptions, url string) error {
	wcfg, err := opts.WorkersConfig()
	if err != nil {
		return usagef("bench: %w", err)
	}
	if opts.exe.DryRun {
		return usagef("bench: --dry-run is sluice run's; bench submits its workers to measure them")
	}
	if err := checkBenchOutputs(opts); err != nil {
		return err
	}
	st, prefix, err := globals.openStore(ctx, url, wcfg.Worker.MaxConcurrency())
	if err != nil {
		return err
	}
	defer st.Close()
	launch, cleanup, err := newBenchWorkers(opts.exe, wcfg, st)
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
// bench URL` as the worker protocol says (cfg.WorkerArgs), with the
// parent's global flags, so each its own --sim link.
func newBenchWorkers(eo executorOptions, cfg bench.WorkersConfig, st *store.Store) (*bench.ExecLauncher, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	exe, err := eo.executor(self, nil)
	if err != nil {
		return nil, nil, err
	}
	l, cleanup, err := bench.NewExecLauncher(exe, st.URL(""), openRecords, func(w bench.WorkerSpec, records string) []string {
		return append(cfg.WorkerArgs(w, records), globals.args()...)
	})
	if errors.Is(err, bench.ErrUnreachable) {
		return nil, nil, usagef("bench: --executor %s: %v", eo.Name, err)
	}
	return l, cleanup, err
}
