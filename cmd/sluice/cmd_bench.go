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
		Use:   "bench URL",
		Short: "Measure what a store gives: parallel puts then gets, throughput and latency",
		Long: `Write --objects objects of --size pseudorandom bytes under a fresh prefix of URL
(URL/sluice-bench-<time>-<random>/) with --concurrency requests in flight, read
them back, and report the throughput and latency the store gave. Lists of
sizes and concurrencies make a sweep; --concurrency auto doubles until that
gains under 5%. Everything written is deleted at the end, also after an error
or Ctrl-C, unless --keep; --read-only reads what is under URL and writes
nothing. Exit status 1 when any request failed for good.

--workers N runs it from N processes at once (--executor slurm|kubernetes: on
a cluster); --predict W --from RECORDS is the scale model. The figures, the
--out and --json fields and these modes: sluice help bench-figures.`,
		Example: `  # 16 objects of 16 MiB, 8 requests in flight
  sluice bench s3://bucket/scratch/

  # one table: every size at every concurrency
  sluice bench s3://bucket/scratch/ --size 1MiB,16MiB --concurrency 1,2,4,8

  # how many requests in flight saturate the link, as seen from an EC2 instance
  sluice bench mem://b/ --sim s3 --concurrency auto

  # read what is there in 8 MiB ranges; keep every request and plot them
  sluice bench s3://bucket/data/ --read-only --range-size 8MiB --out reqs.jsonl --plot bench.png

  # 1, 2 and 4 worker processes, each behind its own 40 MiB/s link, 3 rounds;
  # then what 1000 and 2000 such workers would get
  sluice bench s3://bucket/scratch/ --workers 1,2,4 --runs 3 --sim link=40MiB/s --out run.jsonl
  sluice bench --predict 1000,2000 --from run.jsonl

  # 4 and 8 workers as pods of an Indexed Job
  sluice bench s3://bucket/scratch/ --workers 4,8 --executor kubernetes --image registry.example/sluice:v1`,
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
		Long: `Figures, per phase (the puts or the gets of one cell):
  MiB/s steady, obj/s
                  steady state: over the window in which every worker is busy,
                  from when the last one issued its first request to when the
                  first one finished its last (the whole phase if there is no
                  such window); a request's bytes spread over its duration.
  MiB/s whole     all bytes of the phase over its wall time.
  req MiB/s       each request's bytes over its duration: p10/p50/p90.
  first byte      ms from issue to the first body byte (get) or the upload
                  accepted (put): p50/p90/p99/max.
  last byte       ms from issue to the last byte read or the upload committed.
  errors          requests whose last attempt failed; retries counts attempts
                  after the first (up to --retries, with backoff).
  object generator  MiB/s one core makes object bytes at: never the bottleneck.

--out FILE (.jsonl or .csv) saves every request attempt:
` + recordFieldsHelp() + `
--json prints one JSON object instead of the report: the run (url, sim,
start, kept, generator_mib_s, auto) and its phases, each with the figures
above as fields (steady_mib_s, whole_mib_s, first_byte_ms, ...). --plot
FILE.png draws the per-request throughput, request durations against time
and aggregate throughput, puts blue and gets orange.

--prefixes N spreads each cell's objects over N sub-prefixes (p000/, ...):
under a --sim reqlimit, one prefix meets 503 SlowDown where N need not.

--workers N runs the benchmark from N processes of this binary at once, each
with the flags given (so each behind its own --sim link); a list sweeps,
--runs repeats. It reports each run's aggregate and per-worker MiB/s, their
start skew and the scaling against the fewest workers. --executor slurm or
kubernetes runs them as an array job or Indexed Job (sluice run's executor
flags apply; the store must be one they reach); --start-delay gives them
time to start before they all begin.

--predict W[,W...] --from RECORDS takes one worker's steady MiB/s and
requests a second from a run's records and predicts, for W workers, the
aggregate, the requests a second per prefix over --prefixes prefixes,
whether the per-prefix limit binds (--sim's reqlimit, else S3's), and the
prefixes it needs. Measured figures: docs/benchmarks.md.`,
	}
}
