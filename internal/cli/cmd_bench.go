package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/internal/progress"
	"github.com/sluice-data/sluice/store"
)

type benchOptions struct {
	bench.Settings        // what to measure, as the flags spell it
	out, plot             string
	json, quiet, progress bool
	wide                  bool            // the sweep's table with every figure
	exe                   executorOptions // where --workers' processes run

	// A worker process of --workers is told its part in hidden flags
	// (bench.WorkersConfig.WorkerArgs).
	workerRecords string
	workerStart   int64
	workerPrefix  string
}

func newBenchCommand() *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:     "bench URL",
		Short:   "Measure what a store gives: parallel puts then gets, throughput and latency",
		Long:    helpText("bench"),
		Example: helpText("bench.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.Predict != "" {
				return exactArgs(0)(cmd, args)
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.SizesGiven = cmd.Flags().Changed("size")
			switch {
			case opts.Predict != "":
				return runBenchPredict(cmd.OutOrStdout(), opts)
			case opts.Workers != "":
				return runBenchWorkers(cmd.Context(), cmd.OutOrStdout(), opts, args[0])
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), opts, args[0])
		},
	}
	f := cmd.Flags()
	opts.Settings.Bind(f)
	f.StringVarP(&opts.out, "out", "o", "", "save every request to FILE: .jsonl (JSON lines) or .csv")
	f.StringVar(&opts.plot, "plot", "", "draw the requests to FILE.png")
	f.BoolVar(&opts.json, "json", false, "print the summary as JSON (fields above)")
	f.BoolVar(&opts.wide, "wide", false, "a sweep's table with every percentile and obj/s (some 120 columns)")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress")
	f.BoolVar(&opts.progress, "progress", true, "with --workers on a terminal: a bar a run (its workers running and done); false silences it")
	opts.exe.Bind(f)
	_ = f.MarkHidden("dry-run") // sluice run's: bench has no manifest to show
	f.StringVar(&opts.workerRecords, "worker-records", "", "")
	f.Int64Var(&opts.workerStart, "worker-start", 0, "")
	f.StringVar(&opts.workerPrefix, "worker-prefix", "", "")
	_ = f.MarkHidden("worker-prefix")
	_ = f.MarkHidden("worker-records") // how a worker process is told where its records go
	_ = f.MarkHidden("worker-start")
	return cmd
}

func recordFieldsHelp() string {
	var b strings.Builder
	for _, f := range bench.RecordFields() {
		fmt.Fprintf(&b, "  %-12s %s\n", f.Name, f.Doc)
	}
	return b.String()
}

func runBench(ctx context.Context, out io.Writer, opts benchOptions, url string) error {
	cfg, err := opts.Config()
	if err != nil {
		return usagef("bench: %w", err)
	}
	if err := checkBenchOutputs(opts); err != nil {
		return err
	}
	st, prefix, err := globals.openRetried(ctx, url, cfg.MaxConcurrency())
	if err != nil {
		return err
	}
	defer st.Close()
	if opts.workerRecords != "" {
		cfg.Start = time.Unix(0, opts.workerStart)
		return bench.RunWorkerAt(ctx, st, store.Join(prefix, opts.workerPrefix), cfg, opts.workerRecords, openRecords)
	}
	cfg.Observer = &progress.Bench{Quiet: opts.quiet}
	return bench.RunReport(ctx, st, prefix, cfg, benchOutput(out, opts))
}

// benchOutput is where bench's figures go: --json, --out, --plot.
func benchOutput(out io.Writer, opts benchOptions) bench.Output {
	cols := bench.Narrow
	if opts.wide {
		cols = bench.Wide
	}
	return bench.Output{W: out, JSON: opts.json, Columns: cols, Records: opts.out, Plot: opts.plot, Charts: prog.Charts, Sim: globals.profile.String(), Executor: opts.exe.Name}
}

// checkBenchOutputs refuses --out and --plot names that could not be
// written, before anything is measured.
func checkBenchOutputs(opts benchOptions) error {
	if err := benchOutput(nil, opts).Check(); err != nil {
		return usagef("bench: %v", err)
	}
	return nil
}

// benchFiguresTopic is bench's reference: what each figure means, the
// records and JSON it writes, and its modes in detail.
func benchFiguresTopic() *cobra.Command {
	return &cobra.Command{
		Use:   "bench-figures",
		Short: "sluice bench in detail: its figures, --out and --json fields, and its modes",
		Long:  helpText("bench-figures"),
	}
}
