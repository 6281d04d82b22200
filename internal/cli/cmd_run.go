package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/executors"
	"github.com/sluice-data/sluice/fanout/report"
	"github.com/sluice-data/sluice/internal/fanouthook"
	"github.com/sluice-data/sluice/internal/jobkey"
	"github.com/sluice-data/sluice/internal/profile"
	"github.com/sluice-data/sluice/internal/progress"
	"github.com/sluice-data/sluice/internal/stdio"
	"github.com/sluice-data/sluice/internal/sysmem"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/store"
)

type runOptions struct {
	fanout.Settings // --workers' sizes and join, as the flags spell them
	threads         int
	workers         int
	store           string
	out             string
	keep            bool
	attempts        int
	verbose         bool
	progress        bool
	overwrite       bool
	resume          string
	events          string
	cpuProfile      string
	memProfile      string
	metrics         string
	exe             executorOptions
	hooks           fanouthook.Flags // for tests of exactly-once commits and of killed workers
}

func newRunCommand() *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:     "run 'STAGE ARGS | STAGE ARGS | ...'",
		Short:   "Run a pipeline of stages fused in one process, or fanned out over worker processes",
		Long:    helpText("run"),
		Example: helpText("run.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.resume != "" {
				if len(args) > 0 {
					return usagef("run --resume %s: give no pipeline, the job's spec holds it", opts.resume)
				}
				return nil
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			text := ""
			if len(args) > 0 {
				text = args[0]
			}
			return runRun(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), opts, text)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&opts.threads, "threads", "t", 0, "batches worked on at once in each process (default: cores)")
	opts.Settings.Bind(f)
	f.IntVarP(&opts.workers, "workers", "w", 0, "worker processes to fan the pipeline out over (0: this process; locally at most 4 a core at once)")
	f.StringVar(&opts.store, "store", "", "URL the fanned-out job keeps its objects under (default: a temporary one)")
	f.StringVar(&opts.out, "out", "", "with --workers: an empty prefix the last tasks write their parts and manifest.json under (then no sink)")
	f.StringVar(&opts.resume, "resume", "", "with --workers: go on with the job at this prefix whose driver died (sluice jobs ls lists them); no pipeline")
	f.BoolVar(&opts.overwrite, "overwrite", false, "with --out: take a prefix that holds objects, deleting the old parts once the job succeeds")
	f.BoolVar(&opts.keep, "keep", false, "keep the job's committed outputs and manifests")
	f.IntVar(&opts.attempts, "attempts", 3, "times a task is started before the job fails")
	f.BoolVarP(&opts.verbose, "verbose", "v", false, "print the job's prefix and each phase's time on stderr")
	f.BoolVar(&opts.progress, "progress", true, "with --workers on a terminal: a bar per phase (tasks, failures, rows, MiB/s, time left)")
	f.StringVar(&opts.events, "events", "", "with --workers: write the job's event log (JSON lines) to FILE, for sluice report")
	addMetricsFlag(f, &opts.metrics, "with --workers: tasks by phase and state", "loopback only")
	opts.hooks.Bind(f)
	opts.exe.Bind(f)
	cmd.Flags().StringVar(&opts.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to FILE (for go tool pprof)")
	cmd.Flags().StringVar(&opts.memProfile, "memprofile", "", "write the run's allocations to FILE at its end (go tool pprof -sample_index=alloc_space)")
	return cmd
}

func runRun(ctx context.Context, stdin io.Reader, stdout io.Writer, opts runOptions, text string) error {
	if opts.threads < 0 {
		return usagef("--threads %d: want 0 (the number of cores) or more", opts.threads)
	}
	if opts.workers < 0 {
		return usagef("--workers %d: want 0 (run in this process) or more", opts.workers)
	}
	if err := opts.exe.check(opts.workers); err != nil {
		return err
	}
	stdio.QuietPipes(stdin, stdout)
	stop, err := profile.StartCPU(opts.cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	if opts.memProfile != "" {
		defer func() {
			// The run's result stands: a failure is only reported.
			if err := profile.WriteAllocs(opts.memProfile); err != nil {
				fmt.Fprintln(os.Stderr, "sluice: --memprofile:", err)
			}
		}()
	}
	stores := newStoreSet()
	defer stores.Close()
	env := stageEnv(stdin, stdout, os.Stderr, stores)
	if opts.resume != "" {
		if opts.workers == 0 {
			return usagef("--resume goes on with a fanned-out job: give --workers too")
		}
		if opts.exe.DryRun || opts.out != "" || opts.overwrite {
			return usagef("--resume goes on with the job as its spec says: --dry-run, --out and --overwrite do not apply")
		}
		return stageError(runFanOut(ctx, opts, nil, env, stores))
	}
	p, err := plan.Parse(text)
	if err != nil {
		return usageError{fmt.Errorf("run: %w", err)}
	}
	if opts.overwrite && opts.out == "" {
		return usagef("--overwrite replaces what is at --out: give --out too")
	}
	if opts.out != "" && opts.workers == 0 {
		return usagef("--out takes the results of a fanned-out run: give --workers too")
	}
	if opts.events != "" && opts.workers == 0 {
		return usagef("--events logs the tasks of a fanned-out run: give --workers too")
	}
	if opts.metrics != "" && opts.workers == 0 {
		return usagef("--metrics-addr serves a fanned-out run's metrics: give --workers too")
	}
	spareScans(p)
	if opts.workers > 0 {
		if opts.out != "" {
			env.Output = nil // the workers write the results
		}
		return stageError(runFanOut(ctx, opts, p, env, stores))
	}
	pipe, err := exec.Compile(p, env)
	if err != nil {
		return stageError(err)
	}
	eo := exec.Options{Workers: opts.threads, Open: stores.Open, Mem: mempool.NewMapped(0), HandOff: handOff()}
	if os.Getenv("SLUICE_PIPE_TRACE") != "" {
		// In a run, only an exec stage's program is at the other end of a pipe.
		eo.HandedOff = func() { fmt.Fprintln(os.Stderr, "sluice: pipe: run: read a program's output through shared memory") }
	}
	m, err := opts.MemoryBytes()
	if err != nil {
		return usageError{err}
	}
	if m == 0 {
		m = defaultRunMemory()
	}
	if m > 0 {
		// Of the budget, a quarter is the pool's kept buffers, which the
		// batches in flight and the scans' decoding reuse (not counted as
		// they pass), and the rest what sorts, joins and aggregations
		// hold together before they spill. The Go heap (their groups and
		// tables, and garbage) is held to the whole budget. Measured on
		// TPC-H SF1 Q18 at 256MiB: anonymous RSS 271 MB (M is 268 MB);
		// with all of M for them and the heap at M+64MiB, 347 MB.
		eo.Memory, eo.Mem = m-m/4, mempool.NewMapped(max(m/4, 1))
		defer boundHeap(m)()
	}
	return stageError(exec.Run(ctx, pipe, eo))
}

// runFanOut runs the pipeline over opts.workers worker processes of this
// binary, which get the global flags this process got.
func runFanOut(ctx context.Context, opts runOptions, p *plan.Plan, env exec.Env, stores *store.Set) error {
	dopts := fanout.Options{
		Workers: opts.workers, Threads: opts.threads, Store: opts.store, Out: opts.out, Overwrite: opts.overwrite, Keep: opts.keep, Resume: opts.resume,
		Attempts: opts.attempts, Open: stores.Open, Mem: mempool.NewMapped(0), Env: env,
	}
	if err := opts.Apply(&dopts); err != nil {
		return usageError{err}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// The workers and this process share each prefix's request rate.
	share, remove, err := globals.profile.ShareRequests()
	if err != nil {
		return err
	}
	defer remove()
	if share != "" {
		globals.sim += ",reqshare=" + share
	}
	// The workers' test hooks reach them in their environment, as the
	// executor passes it on; the driver's in ctx.
	ctx, opts.exe.Env = opts.hooks.Apply(ctx, opts.exe.Env)
	if dopts.Executor, err = opts.exe.executor(self, append(globals.args(), "worker")); err != nil {
		return err
	}
	// The key a resumed driver checks the spec with stays on this
	// machine; a job made without one cannot be resumed (fanout.Options.Key).
	if path, err := jobkey.Path(); err == nil {
		dopts.Key, err = jobkey.Load(path)
		if err != nil && opts.resume != "" {
			return fmt.Errorf("resume: the job key: %w", err)
		}
	}
	if opts.exe.DryRun && p != nil {
		return executorError(executors.DryRun(ctx, os.Stdout, os.Stderr, opts.exe.Name, p, dopts))
	}
	if s, ok := firstStage(p).(*plan.Scan); ok && s.Stats {
		// scan --stats: the workers' scans, summed.
		dopts.ScanStats = func(tasks int, read fanout.ScanCounts) { fmt.Fprintln(os.Stderr, read.String(tasks)) }
	}
	if opts.verbose {
		dopts.Log = func(format string, a ...any) { fmt.Fprintf(os.Stderr, "sluice: "+format+"\n", a...) }
	} else {
		// One line, so that a user whose driver dies knows what to resume
		// or remove; -v logs it among the rest.
		// The program this is: a job that needed sluice-full needs it again.
		program := "sluice"
		if prog.Full {
			program = fullName
		}
		resume := fmt.Sprintf("%s run --workers %d", program, opts.workers)
		if opts.exe.Name != "" && opts.exe.Name != "local" {
			resume += " --executor " + opts.exe.Name
		}
		dopts.Started = func(job string) {
			fmt.Fprintf(os.Stderr, "sluice: job %s (if this process dies: %s --resume %[1]s, or sluice jobs rm %[1]s)\n", job, resume)
		}
	}
	if opts.progress && stdio.IsTerminal(os.Stderr) {
		bars := progress.NewJob(os.Stderr)
		dopts.Progress = bars.Update
		defer bars.Close()
	}
	return withJobMetrics(opts.metrics, &dopts, func() error { return runWithEvents(ctx, p, dopts, opts.events) })
}

// runWithEvents runs the job, its event log to events when named.
func runWithEvents(ctx context.Context, p *plan.Plan, dopts fanout.Options, events string) error {
	if events == "" {
		return fanout.Run(ctx, p, dopts)
	}
	return report.Log(events, func(w io.Writer) error {
		dopts.Events = w
		return fanout.Run(ctx, p, dopts)
	})
}

// fanoutTopic tells how run --workers works and how its executors are
// chosen.
func fanoutTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "fanout",
		Short: "How sluice run --workers fans a pipeline out, and its executors",
		Long:  helpText("fanout"),
	}
}

// firstStage is p's source, nil for no plan (a resumed job's is in its
// spec).
func firstStage(p *plan.Plan) plan.Stage {
	if p == nil {
		return nil
	}
	return p.Stages[0]
}

// defaultRunMemory is run's --memory in one process when none is given:
// a quarter of the memory the machine (or the process's control group)
// has, at least 256MiB. The run's sorts, joins and aggregations share
// it: 256MiB, the old default, made TPC-H SF1 Q9's joins spill, twice its
// CPU, once they shared it.
func defaultRunMemory() int64 {
	return max(sysmem.Total()/4, 256<<20)
}
