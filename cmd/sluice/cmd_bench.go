package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/internal/progress"
	"github.com/sluice-data/sluice/store"
)

type benchOptions struct {
	objects     int
	sizes       []string
	concurrency string
	rangeSize   string
	parts       int
	readOnly    bool
	writeOnly   bool
	keep        bool
	out         string
	plot        string
	json        bool
	quiet       bool
	progress    bool
	retries     int
	seed        uint64
	prefixes    int

	// Fanned out over processes (bench_workers.go) and the scale model
	// (bench_predict.go).
	workers       string
	runs          int
	workerRecords string
	workerStart   int64
	workerPrefix  string
	predict       string
	from          string
	startDelay    time.Duration
	exe           executorOptions
}

func newBenchCommand() *cobra.Command {
	var opts benchOptions
	cmd := &cobra.Command{
		Use:     "bench URL",
		Short:   "Measure what a store gives: parallel puts then gets, throughput and latency",
		Long:    helpText("bench"),
		Example: helpText("bench.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.predict != "" {
				return exactArgs(0)(cmd, args)
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.predict != "":
				return runBenchPredict(cmd.OutOrStdout(), opts)
			case opts.workers != "":
				return runBenchWorkers(cmd.Context(), cmd.OutOrStdout(), opts, args[0], cmd.Flags().Changed("size"))
			}
			return runBench(cmd.Context(), cmd.OutOrStdout(), opts, args[0], cmd.Flags().Changed("size"))
		},
	}
	f := cmd.Flags()
	f.IntVarP(&opts.objects, "objects", "n", 0, "objects per cell (default: max(16, 4 x concurrency); with --read-only, all)")
	f.StringSliceVarP(&opts.sizes, "size", "s", []string{"16MiB"}, "object size(s), such as 1MiB,16MiB,1GiB or 500KB")
	f.StringVarP(&opts.concurrency, "concurrency", "c", "8", "requests in flight: a number, a list (1,2,4,8), or auto")
	f.StringVar(&opts.rangeSize, "range-size", "", "read each object as parallel ranged GETs of this size (such as 8MiB)")
	f.IntVar(&opts.parts, "parts", 0, "parts of one object uploaded at once when a write is multipart (objects over 8MiB; 0: the store adapts it, from 4)")
	f.BoolVar(&opts.readOnly, "read-only", false, "read the objects already under URL; write nothing")
	f.BoolVar(&opts.writeOnly, "write-only", false, "only write (and delete, unless --keep)")
	f.BoolVar(&opts.keep, "keep", false, "keep the objects written and print where they are")
	f.StringVarP(&opts.out, "out", "o", "", "save every request to FILE: .jsonl (JSON lines) or .csv")
	f.StringVar(&opts.plot, "plot", "", "draw the requests to FILE.png")
	f.BoolVar(&opts.json, "json", false, "print the summary as JSON (fields above)")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress")
	f.BoolVar(&opts.progress, "progress", true, "with --workers on a terminal: a bar a run (its workers running and done); false silences it")
	f.IntVar(&opts.retries, "retries", 3, "retries of a request that failed with a retryable error")
	f.Uint64Var(&opts.seed, "seed", 1, "seed of the object bytes")
	f.IntVar(&opts.prefixes, "prefixes", 0, "spread each cell's objects over this many sub-prefixes (p000/, p001/, ...)")
	f.StringVar(&opts.workers, "workers", "", "run from this many worker processes at once, each behind its own --sim link; a list (1,2,4) sweeps")
	f.IntVar(&opts.runs, "runs", 1, "with --workers: rounds of the sweep; figures are medians over rounds")
	f.StringVar(&opts.predict, "predict", "", "scale model: predict for these worker counts (1000,2000) from --from's records; no URL")
	f.StringVar(&opts.from, "from", "", "with --predict: the records (.jsonl or .csv) of a measured run (--out)")
	f.DurationVar(&opts.startDelay, "start-delay", 0, "with --workers: how long the workers get to start before they all begin (default 500ms + 25ms a worker; on slurm or kubernetes 10s + 100ms a worker)")
	addExecutorFlags(f, &opts.exe)
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

// benchConfig turns flags into a bench.Config, every mistake a usage error.
func benchConfig(opts benchOptions, sizeGiven bool) (bench.Config, int, error) {
	cfg := bench.Config{
		Objects: opts.objects, ReadOnly: opts.readOnly, WriteOnly: opts.writeOnly, Keep: opts.keep,
		Attempts: opts.retries + 1, Seed: opts.seed, Prefixes: opts.prefixes, PartConcurrency: opts.parts,
	}
	if opts.parts < 0 {
		return cfg, 0, usagef("bench: --parts must not be negative, got %d", opts.parts)
	}
	if opts.retries < 0 {
		return cfg, 0, usagef("bench: --retries must not be negative, got %d", opts.retries)
	}
	if opts.readOnly && sizeGiven {
		return cfg, 0, usagef("bench: --size does not apply to --read-only (the objects have their sizes)")
	}
	if !opts.readOnly {
		for _, s := range opts.sizes {
			n, err := bench.ParseSize(s)
			if err != nil {
				return cfg, 0, usagef("bench: --size: %v", err)
			}
			if n <= 0 {
				return cfg, 0, usagef("bench: --size %s: object size must be positive", s)
			}
			cfg.Sizes = append(cfg.Sizes, n)
		}
	}
	if opts.rangeSize != "" {
		n, err := bench.ParseSize(opts.rangeSize)
		if err != nil {
			return cfg, 0, usagef("bench: --range-size: %v", err)
		}
		if n <= 0 {
			return cfg, 0, usagef("bench: --range-size %s: must be positive", opts.rangeSize)
		}
		cfg.RangeSize = n
	}
	conc := 0
	if strings.TrimSpace(opts.concurrency) == "auto" {
		cfg.Auto = true
		conc = 256
	} else {
		var ok bool
		if cfg.Concurrency, ok = ints(opts.concurrency, 1); !ok {
			return cfg, 0, usagef("bench: --concurrency %q: want positive numbers (1,2,4) or auto", opts.concurrency)
		}
		conc = slices.Max(cfg.Concurrency)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, 0, usagef("bench: %v", err)
	}
	return cfg, conc, nil
}

func runBench(ctx context.Context, out io.Writer, opts benchOptions, url string, sizeGiven bool) error {
	cfg, conc, err := benchConfig(opts, sizeGiven)
	if err != nil {
		return err
	}
	if err := checkBenchOutputs(opts); err != nil {
		return err
	}
	st, prefix, err := globals.openRetried(ctx, url, conc)
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
	return bench.Output{W: out, JSON: opts.json, Records: opts.out, Plot: opts.plot, Sim: globals.profile.String(), Executor: opts.exe.Name}
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
