package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/store"
)

// WorkerSpec is one worker process of a fanned-out run: the same
// write-then-read benchmark as Run, under its own prefix, behind its own
// link.
type WorkerSpec struct {
	// Index is which of Count workers this is, from 0.
	Index, Count int
	// URL is the store (its root, as st.URL("") says it), Prefix the key
	// prefix of the worker's own, empty, under it. They are apart so a
	// worker opens the store as the driver did (a file:// store's root is
	// where it stops pruning empty directories).
	URL, Prefix string
	// Run is the prefix of the run, shared by its workers: Prefix is
	// WorkerPrefix(Run, Index), so a worker told only Run finds its own
	// from its index (in the environment, as an array job's task does).
	Run string
	// Start is when every worker of the run begins measuring (Config.Start);
	// its records' times count from it.
	Start time.Time
}

// Launcher runs the workers of one run (ws[i].Index is i) at once, to
// their end, and returns each one's records, also when err is not nil
// (whatever each recorded). The first worker to fail stops the others,
// and err, the first failure, names it. A worker cleans up what it wrote,
// also when stopped or when ctx is cancelled, as Run does; RunWorkers
// deletes what a worker that died could not.
//
// ExecLauncher runs them as one phase of a fanout.Executor, the one way
// sluice starts worker processes (sluice bench --workers uses it with each
// of fanout's executors); in tests a Launcher may run workers in this
// process.
type Launcher interface {
	Launch(ctx context.Context, ws []WorkerSpec) ([][]Record, error)
}

// WorkerPrefix is the prefix of worker i of the run under run.
func WorkerPrefix(run string, i int) string { return run + fmt.Sprintf("w%03d/", i) }

// WorkersConfig says how a fanned-out run is swept.
type WorkersConfig struct {
	// Workers lists the numbers of worker processes to measure, each a
	// run of its own (1, 2, 4: the scaling against one worker).
	Workers []int
	// Rounds repeats the sweep, rotating nothing: round r measures every
	// count in order (default 1). Medians are over rounds.
	Rounds int
	// StartDelay is how long the processes get to start before they all
	// begin: default 500ms + 25ms a worker, and through an ExecLauncher
	// over a cluster's executor (not fanout.Local), whose pods and array
	// tasks take seconds to be scheduled and started, 10s + 100ms a worker
	// of the largest count. A worker that starts later begins at once; its
	// lateness shows as the run's StartSkew.
	StartDelay time.Duration
	// Keep leaves the objects in place (the workers are told so too).
	Keep bool
	// Progress, when set, hears about each run as it ends.
	Progress func(WorkersRun)
	// Worker is the benchmark each worker runs, for RunWorkersReport to
	// describe: one object size at one concurrency. The Launcher is what
	// tells the workers (an ExecLauncher, with WorkerArgs).
	Worker Config
}

const maxWorkers = 1024

// Validate reports the first setting that makes c unusable, in one line.
func (c WorkersConfig) Validate() error {
	if len(c.Workers) == 0 {
		return errors.New("no worker count given")
	}
	for _, n := range c.Workers {
		if n < 1 || n > maxWorkers {
			return fmt.Errorf("workers must be in 1..%d, got %d", maxWorkers, n)
		}
	}
	if c.Rounds < 0 || c.StartDelay < 0 {
		return errors.New("rounds and start delay must not be negative")
	}
	// What WorkerArgs can tell a worker: its own objects to write, one
	// size at one concurrency, since the worker counts are the sweep.
	switch w := c.Worker; {
	case w.ReadOnly:
		return errors.New("workers write what they read: read-only does not apply")
	case w.Auto || len(w.Sizes) > 1 || len(w.Concurrency) > 1:
		return errors.New("a worker runs one object size at one concurrency")
	}
	return nil
}

// WorkersRun is one run of Workers processes at once.
type WorkersRun struct {
	Round   int `json:"round"`
	Workers int `json:"workers"`
	// Cell is the number the run's records carry in Record.Cell.
	Cell int `json:"cell"`
	// Put and Get are the aggregate over every process: the steady window
	// is where every worker of every process is busy.
	Put Summary `json:"put"`
	Get Summary `json:"get"`
	// PerWorkerPut and PerWorkerGet are each process's own steady MiB/s.
	PerWorkerPut []float64 `json:"per_worker_put_mib_s"`
	PerWorkerGet []float64 `json:"per_worker_get_mib_s"`
	// StartSkew is how far apart the processes issued their first
	// requests: the latest first request minus the earliest.
	StartSkew time.Duration `json:"-"`
	Err       string        `json:"error,omitempty"`
}

// Scaling is one worker count's medians over the rounds, and its ratio
// against the smallest count measured (Base): ideal is Workers/Base.
type Scaling struct {
	Workers  int     `json:"workers"`
	Base     int     `json:"base"`
	PutMiBps float64 `json:"put_mib_s"`
	GetMiBps float64 `json:"get_mib_s"`
	// PutRatio and GetRatio are the medians over rounds of each round's
	// aggregate over the same round's aggregate at Base workers.
	PutRatio float64 `json:"put_ratio"`
	GetRatio float64 `json:"get_ratio"`
	Ideal    float64 `json:"ideal"`
}

// WorkersResult is a fanned-out sweep. Record times count from Start.
type WorkersResult struct {
	Start   time.Time
	Prefix  string
	Kept    bool
	Runs    []WorkersRun
	Scaling []Scaling
	Records []Record
}

// RunWorkers measures the write-then-read benchmark from each count of
// worker processes at once, launched by launch, under a fresh prefix
// inside prefix (worker i of a run of k under r<round>-k<k>/w<i>/). Unless
// cfg.Keep it deletes everything left under that prefix at the end, also
// on error or cancellation, whatever the workers managed themselves. The
// result holds what was measured even when err is not nil.
func RunWorkers(ctx context.Context, st *store.Store, prefix string, cfg WorkersConfig, launch Launcher) (res WorkersResult, err error) {
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	rounds := max(cfg.Rounds, 1)
	res.Start = time.Now()
	res.Prefix = freshPrefix(prefix)
	res.Kept = cfg.Keep
	r := &runner{st: st, cfg: Config{}.withDefaults(), written: map[string]bool{}}
	if err := r.checkEmpty(ctx, res.Prefix); err != nil {
		return res, err
	}
	if !cfg.Keep {
		defer r.cleanupAtEnd(ctx, res.Prefix, &err)
	}
	defer func() { res.Scaling = scaling(res.Runs) }()
	for round := range rounds {
		for _, k := range cfg.Workers {
			run, recs, err := runOnce(ctx, st, res, round, k, cfg, launch)
			res.Records = append(res.Records, recs...)
			res.Runs = append(res.Runs, run)
			if cfg.Progress != nil {
				cfg.Progress(run)
			}
			if err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// runOnce launches k workers at once and analyzes their records together.
func runOnce(ctx context.Context, st *store.Store, res WorkersResult, round, k int, cfg WorkersConfig, launch Launcher) (WorkersRun, []Record, error) {
	run := WorkersRun{Round: round, Workers: k, Cell: len(res.Runs)}
	delay := cfg.StartDelay
	if delay == 0 {
		delay = defaultStartDelay(launch, cfg.Workers, k)
	}
	start := time.Now().Add(delay)
	shift := start.Sub(res.Start)
	runPrefix := res.Prefix + fmt.Sprintf("r%d-k%d/", round, k)
	specs := make([]WorkerSpec, k)
	for i := range specs {
		specs[i] = WorkerSpec{Index: i, Count: k, Start: start, URL: st.URL(""), Run: runPrefix, Prefix: WorkerPrefix(runPrefix, i)}
	}
	perProc, err := launch.Launch(ctx, specs)
	perProc = append(perProc, make([][]Record, max(0, k-len(perProc)))...)
	for i, recs := range perProc[:k] {
		for j := range recs {
			rec := &recs[j]
			rec.Cell, rec.Process, rec.Processes = run.Cell, i, k
			rec.Start += shift
			rec.LastByte += shift
			if rec.FirstByte > 0 {
				rec.FirstByte += shift
			}
		}
	}
	perProc = perProc[:k]
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		run.Err = oneLine(err)
	}
	var all []Record
	firsts := make([]time.Duration, 0, k)
	for _, recs := range perProc {
		all = append(all, recs...)
		if len(recs) > 0 {
			firsts = append(firsts, slices.MinFunc(recs, func(a, b Record) int { return cmp.Compare(a.Start, b.Start) }).Start)
		}
	}
	slices.SortFunc(all, func(a, b Record) int { return cmp.Compare(a.Start, b.Start) })
	if len(firsts) > 0 {
		run.StartSkew = slices.Max(firsts) - slices.Min(firsts)
	}
	run.Put = analyzeKind(all, Put)
	run.Get = analyzeKind(all, Get)
	for _, recs := range perProc {
		run.PerWorkerPut = append(run.PerWorkerPut, analyzeKind(recs, Put).SteadyMiBps)
		run.PerWorkerGet = append(run.PerWorkerGet, analyzeKind(recs, Get).SteadyMiBps)
	}
	return run, all, err
}

// defaultStartDelay is how long the k workers of a run get to start
// (WorkersConfig.StartDelay).
func defaultStartDelay(launch Launcher, counts []int, k int) time.Duration {
	if l, ok := launch.(*ExecLauncher); ok {
		if _, local := l.Exe.(*fanout.Local); !local {
			return 10*time.Second + time.Duration(slices.Max(counts))*100*time.Millisecond
		}
	}
	return 500*time.Millisecond + time.Duration(k)*25*time.Millisecond
}

// analyzeKind summarizes the records of one kind over their own span: from
// the first request issued to the last one ended.
func analyzeKind(recs []Record, kind Kind) Summary {
	var of []Record
	span := Span{Start: -1}
	for _, r := range recs {
		if r.Kind != kind {
			continue
		}
		of = append(of, r)
		if span.Start < 0 || r.Start < span.Start {
			span.Start = r.Start
		}
		span.End = max(span.End, r.LastByte)
	}
	if len(of) == 0 {
		return Summary{Kind: kind}
	}
	s := Analyze(of, span)
	s.Kind = kind
	return s
}

// scaling takes each worker count's medians over the rounds, and each
// round's ratio against the smallest count of the same round.
func scaling(runs []WorkersRun) []Scaling {
	if len(runs) == 0 {
		return nil
	}
	base := slices.MinFunc(runs, func(a, b WorkersRun) int { return cmp.Compare(a.Workers, b.Workers) }).Workers
	baseOf := map[int]WorkersRun{} // by round
	var counts []int
	for _, r := range runs {
		if r.Err != "" {
			continue
		}
		if r.Workers == base {
			baseOf[r.Round] = r
		}
		if !slices.Contains(counts, r.Workers) {
			counts = append(counts, r.Workers)
		}
	}
	slices.Sort(counts)
	var out []Scaling
	for _, k := range counts {
		var put, get, putR, getR []float64
		for _, r := range runs {
			if r.Workers != k || r.Err != "" {
				continue
			}
			put = append(put, r.Put.SteadyMiBps)
			get = append(get, r.Get.SteadyMiBps)
			if b, ok := baseOf[r.Round]; ok {
				if b.Put.SteadyMiBps > 0 {
					putR = append(putR, r.Put.SteadyMiBps/b.Put.SteadyMiBps)
				}
				if b.Get.SteadyMiBps > 0 {
					getR = append(getR, r.Get.SteadyMiBps/b.Get.SteadyMiBps)
				}
			}
		}
		out = append(out, Scaling{Workers: k, Base: base, Ideal: float64(k) / float64(base),
			PutMiBps: median(put), GetMiBps: median(get), PutRatio: median(putR), GetRatio: median(getR)})
	}
	return out
}

// median is the middle value (the mean of the two middle ones), 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return Percentile(s, 0.5)
}

// WriteWorkersReport prints each run (aggregate and per-worker steady
// MiB/s, how far apart the workers started) and then the scaling: each
// count's medians and ratios against the smallest count.
func WriteWorkersReport(w io.Writer, res WorkersResult) error {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Two header lines, as in WriteTable, keep it within 100 columns.
	fmt.Fprintln(tw, "\t\tput MiB/s\tper worker\tget MiB/s\tper worker\t\t\tstart skew\t")
	fmt.Fprintln(tw, "round\tworkers\tall\tmin/p50/max\tall\tmin/p50/max\terrors\tretries\tms\t")
	for _, r := range res.Runs {
		fmt.Fprintf(tw, "%d\t%d\t%.1f\t%s\t%.1f\t%s\t%d\t%d\t%.0f\t\n", r.Round+1, r.Workers,
			r.Put.SteadyMiBps, spreadOf(r.PerWorkerPut), r.Get.SteadyMiBps, spreadOf(r.PerWorkerGet),
			r.Put.Errors+r.Get.Errors, r.Put.Retries+r.Get.Retries, float64(r.StartSkew)/float64(time.Millisecond))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeTrimmed(w, b.Bytes()); err != nil {
		return err
	}
	if len(res.Scaling) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nscaling (medians over %d round(s); ratio: each round's aggregate over the same round's at %d worker(s)):\n",
		len(res.Runs)/max(len(res.Scaling), 1), res.Scaling[0].Base)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\tput MiB/s\tput ratio\tget MiB/s\tget ratio\tideal\tput/ideal\tget/ideal\t")
	for _, s := range res.Scaling {
		fmt.Fprintf(tw, "%d\t%.1f\t%.2f\t%.1f\t%.2f\t%.0f\t%.2f\t%.2f\t\n", s.Workers, s.PutMiBps, s.PutRatio,
			s.GetMiBps, s.GetRatio, s.Ideal, s.PutRatio/s.Ideal, s.GetRatio/s.Ideal)
	}
	return tw.Flush()
}

func spreadOf(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return fmt.Sprintf("%.1f/%.1f/%.1f", s[0], Percentile(s, 0.5), s[len(s)-1])
}
