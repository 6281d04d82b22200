package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/dist"
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
	}
	wcfg := bench.WorkersConfig{Rounds: opts.runs, Keep: opts.keep}
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
	launch, closeLaunch, err := newLocalWorkers(opts, cfg)
	if err != nil {
		return err
	}
	defer closeLaunch()
	if !opts.quiet {
		wcfg.Progress = func(r bench.WorkersRun) {
			fmt.Fprintf(os.Stderr, "round %d, %d worker(s): put %.1f MiB/s, get %.1f MiB/s aggregate\n",
				r.Round+1, r.Workers, r.Put.SteadyMiBps, r.Get.SteadyMiBps)
		}
	}
	res, runErr := bench.RunWorkers(ctx, st, prefix, wcfg, launch)
	if len(res.Records) > 0 {
		if err := saveWorkersFiles(opts, res); err != nil {
			return err
		}
	}
	if runErr != nil {
		return runErr
	}
	where := st.URL(res.Prefix)
	if opts.json {
		type run struct {
			bench.WorkersRun
			StartSkew float64 `json:"start_skew_s"`
		}
		doc := struct {
			URL     string          `json:"url"`
			Sim     string          `json:"sim"`
			Start   time.Time       `json:"start"`
			Kept    bool            `json:"kept"`
			Runs    []run           `json:"runs"`
			Scaling []bench.Scaling `json:"scaling"`
		}{URL: where, Sim: globals.profile.String(), Start: res.Start, Kept: res.Kept, Scaling: res.Scaling}
		for _, r := range res.Runs {
			doc.Runs = append(doc.Runs, run{r, r.StartSkew.Seconds()})
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "sluice bench %s --workers %s: %d object(s) of %s a worker, concurrency %d, each worker behind its own link (%s)\n",
			where, opts.workers, objectsPerWorker(cfg), bench.FormatSize(cfg.Sizes[0]), cfg.Concurrency[0], globals.profile)
		if err := bench.WriteWorkersReport(out, res); err != nil {
			return err
		}
		if res.Kept {
			fmt.Fprintf(out, "kept the objects under %s\n", where)
		}
	}
	var failed int
	for _, r := range res.Runs {
		failed += r.Put.Errors + r.Get.Errors
	}
	if failed > 0 {
		return fmt.Errorf("bench: %d requests failed after retries (see the errors column and --out)", failed)
	}
	return nil
}

func objectsPerWorker(cfg bench.Config) int {
	if cfg.Objects > 0 {
		return cfg.Objects
	}
	return max(16, 4*cfg.Concurrency[0])
}

// saveWorkersFiles writes every record (--out) and the timeline of the
// last round, one panel per worker count (--plot).
func saveWorkersFiles(opts benchOptions, res bench.WorkersResult) error {
	if opts.out != "" {
		format, err := bench.RecordFormat(opts.out)
		if err != nil {
			return err
		}
		if err := writeFile(opts.out, func(w io.Writer) error { return bench.WriteRecords(w, format, res.Records) }); err != nil {
			return err
		}
	}
	if opts.plot != "" {
		last := res.Runs[len(res.Runs)-1].Round
		cells := map[int]bool{}
		for _, r := range res.Runs {
			cells[r.Cell] = r.Round == last
		}
		var recs []bench.Record
		for _, r := range res.Records {
			if cells[r.Cell] {
				recs = append(recs, r)
			}
		}
		return writeFile(opts.plot, func(w io.Writer) error { return bench.WriteTimeline(w, recs) })
	}
	return nil
}

// runBenchWorker is one worker process: the benchmark under its URL from
// the shared start, its records to the file it was given, nothing else.
func runBenchWorker(ctx context.Context, st *store.Store, prefix string, cfg bench.Config, opts benchOptions) error {
	cfg.Start = time.Unix(0, opts.workerStart)
	res, runErr := bench.Run(ctx, st, prefix, cfg)
	if err := writeFile(opts.workerRecords, func(w io.Writer) error { return bench.WriteRecords(w, "jsonl", res.Records) }); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	for _, s := range res.Summaries {
		if s.Errors > 0 {
			return fmt.Errorf("bench: %d requests failed after retries", s.Errors)
		}
	}
	return nil
}

// newLocalWorkers launches each worker as a child process of this binary
// through dist's local executor, the way sluice run --workers starts its
// tasks: `sluice bench URL` with the parent's flags (so its own --sim
// link), told when to start and where to leave its records. Stopping
// interrupts the workers, so each deletes what it wrote, and kills only
// those still running after workerWait.
func newLocalWorkers(opts benchOptions, cfg bench.Config) (*bench.ExecLauncher, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-bench-workers-")
	if err != nil {
		return nil, nil, err
	}
	shared := []string{"-q", "-n", strconv.Itoa(opts.objects), "--size", bench.FormatSize(cfg.Sizes[0]),
		"-c", strconv.Itoa(cfg.Concurrency[0]), "--retries", strconv.Itoa(opts.retries), "--prefixes", strconv.Itoa(opts.prefixes)}
	if opts.rangeSize != "" {
		shared = append(shared, "--range-size", opts.rangeSize)
	}
	if opts.writeOnly {
		shared = append(shared, "--write-only")
	}
	if opts.keep {
		shared = append(shared, "--keep")
	}
	shared = append(shared, globals.args()...)
	records := func(w bench.WorkerSpec) string {
		return filepath.Join(dir, fmt.Sprintf("k%d-w%d-%d.jsonl", w.Count, w.Index, w.Start.UnixNano()))
	}
	exe := dist.NewLocal([]string{self})
	exe.Grace = workerWait
	l := &bench.ExecLauncher{
		Exe: exe,
		Args: func(w bench.WorkerSpec) []string {
			return append([]string{"bench", w.URL, "--worker-prefix", w.Prefix, "--worker-records", records(w),
				"--worker-start", strconv.FormatInt(w.Start.UnixNano(), 10),
				"--seed", strconv.FormatUint(opts.seed+uint64(w.Index), 10)}, shared...)
		},
		Records: func(w bench.WorkerSpec) ([]bench.Record, error) {
			f, err := os.Open(records(w))
			if err != nil {
				return nil, nil // a worker that died before writing any
			}
			defer f.Close()
			return bench.ReadRecords(f, "jsonl")
		},
	}
	return l, func() { l.Close(); os.RemoveAll(dir) }, nil
}

// workerWait bounds how long a stopped worker gets to delete what it
// wrote before it is killed (bench's own cleanup is bounded at 2 minutes).
const workerWait = 150 * time.Second
