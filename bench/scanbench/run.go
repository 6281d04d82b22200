package scanbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// Measurements, by the names Config.Only takes.
const (
	Raw    = "raw"
	Scan   = "scan"
	Naive  = "naive"
	Whole  = "whole"
	Decode = "decode"
	// NaiveProjection and WholeProjection are the naive and whole-object
	// readers of only Config.Projection's columns, made when it is set.
	NaiveProjection = "naive-projection"
	WholeProjection = "whole-projection"
)

// All lists every measurement of a run, in the order a run makes them.
func All() []string {
	return []string{Raw, Scan, Naive, Whole, Decode, NaiveProjection, WholeProjection}
}

// Config says what to measure and where.
type Config struct {
	// Store holds the dataset, seen through the link being measured (a
	// store opened with sim.WrapOption); Pattern names the dataset in it,
	// as scan.Open takes it.
	Store   *store.Store
	Pattern string
	// Local is the same store without the link model, used only to load
	// the file bytes for decode-only. Nil loads them through Store.
	Local *store.Store

	// Runs is how many times each measurement is made; the report gives
	// medians. Default 3.
	Runs int
	// Only limits a run to these measurements (see All); nil means all.
	Only []string
	// Memory is scan's budget (scan.Options.Memory); 0 is scan's default.
	// It is RSS's child's too, where 0 is RSSBudget of the dataset.
	Memory int64
	// BatchRows is the batch size of every reader. Default 64Ki, scan's.
	BatchRows int
	// RawConcurrency are the requests in flight raw GET is tried at.
	// Default 4, 8, 16, 32, 64.
	RawConcurrency []int
	// FileConcurrency are the files read at once the naive and the
	// whole-object readers are tried at. Default 1, 2, 4, 8.
	FileConcurrency []int
	// Resweep sweeps the concurrencies in every run. By default the first
	// run sweeps and later runs measure only the best it found, which
	// keeps a run of a slow link within minutes.
	Resweep bool
	// Checksum sums every scan's values (costs decode time).
	Checksum bool
	// NoWarmup skips the untimed scan before the first run, which
	// otherwise pays for first-touching memory and filling caches.
	NoWarmup bool

	// Projection, when set, adds a scan of only these columns, reporting
	// the bytes it fetched against those of their column chunks and the
	// footers, and the naive and whole-object readers of the same columns
	// (NaiveProjection, WholeProjection) to compare it with: with few
	// columns decoding no longer hides what each reader's round trips cost.
	Projection []string
	// Faulty, when set, is the same objects behind the same link with
	// faults added: each run adds a scan through it, beside a scan through
	// Store, and compares their times and checksums.
	Faulty *store.Store

	// Mem allocates every reader's Arrow memory; nil is the default
	// allocator.
	Mem memory.Allocator
	// Log, when set, gets a line per measurement as it finishes.
	Log io.Writer

	// Sim and Faults are the specs of Store's link model and of Faulty's
	// (sim.Profile's String), for the log and the Document.
	Sim, Faults string
	// RSS, when set, makes Measure also take the peak resident memory of
	// a scan of the dataset in a child process.
	RSS *RSSChild
}

func (c Config) withDefaults() Config {
	if c.Runs <= 0 {
		c.Runs = 3
	}
	if c.BatchRows <= 0 {
		c.BatchRows = 64 << 10
	}
	if len(c.RawConcurrency) == 0 {
		c.RawConcurrency = []int{4, 8, 16, 32, 64}
	}
	if len(c.FileConcurrency) == 0 {
		c.FileConcurrency = []int{1, 2, 4, 8}
	}
	if c.Local == nil {
		c.Local = c.Store
	}
	if c.Mem == nil {
		c.Mem = memory.DefaultAllocator
	}
	if c.Only == nil {
		c.Only = All()
	}
	return c
}

func (c Config) validate() error {
	if c.Store == nil {
		return errors.New("scanbench: no store")
	}
	for _, m := range c.Only {
		if !slices.Contains(All(), m) {
			return fmt.Errorf("scanbench: unknown measurement %q (want %v)", m, All())
		}
	}
	for _, n := range append(slices.Clone(c.RawConcurrency), c.FileConcurrency...) {
		if n <= 0 {
			return fmt.Errorf("scanbench: concurrency %d: want at least 1", n)
		}
	}
	return nil
}

// Sweep is one measurement at several concurrencies.
type Sweep struct {
	MiBps map[int]float64 `json:"mib_s"` // by concurrency
	Best  int             `json:"best"`
}

// Rate is the best concurrency's rate, or 0 when not measured.
func (s Sweep) Rate() float64 { return s.MiBps[s.Best] }

func (s *Sweep) add(c int, mibps float64) {
	if s.MiBps == nil {
		s.MiBps = map[int]float64{}
	}
	s.MiBps[c] = mibps
	if mibps > s.MiBps[s.Best] {
		s.Best = c
	}
}

// Run is one run's figures. Rates are MiB of file bytes per second.
type Run struct {
	Raw    Sweep       `json:"raw"`
	Scan   *ScanResult `json:"scan,omitempty"`
	Naive  Sweep       `json:"naive"`
	Whole  Sweep       `json:"whole"`
	Decode float64     `json:"decode_mib_s"`
	// ArrowGo is arrow-go's record reader over the same bytes in memory,
	// measured with decode-only.
	ArrowGo float64 `json:"arrowgo_mib_s"`
	// DecodeCPU is decode-only's CPU use, ArrowGoCPU arrow-go's; CPU the
	// whole run's.
	DecodeCPU  CPU `json:"decode_cpu"`
	ArrowGoCPU CPU `json:"arrowgo_cpu"`
	CPU        CPU `json:"cpu"`

	Projection *ScanResult `json:"projection,omitempty"`
	// NaiveProjection and WholeProjection read only the projection's
	// columns; their rates, as Projection's, are MiB of the projection's
	// column chunks and footers per second.
	NaiveProjection Sweep `json:"naive_projection"`
	WholeProjection Sweep `json:"whole_projection"`
	// Clean and Faulty are the scans of the fault comparison.
	Clean  *ScanResult `json:"clean,omitempty"`
	Faulty *ScanResult `json:"faulty,omitempty"`
}

// Ratios of one run; zero where a side was not measured.
type Ratios struct {
	ScanRaw    float64 `json:"scan_raw"`
	ScanNaive  float64 `json:"scan_naive"`
	ScanWhole  float64 `json:"scan_whole"`
	ScanDecode float64 `json:"scan_decode"`
	// ProjectionNaive and ProjectionWhole compare the scan of the
	// projection with the naive and whole-object readers of the same
	// columns.
	ProjectionNaive float64 `json:"projection_naive,omitempty"`
	ProjectionWhole float64 `json:"projection_whole,omitempty"`
	// DecodeArrowGo is decode-only's rate over arrow-go's record reader's.
	DecodeArrowGo float64 `json:"decode_arrowgo"`
	// FaultySlowdown is the faulty scan's time over the clean one's.
	FaultySlowdown float64 `json:"faulty_time_ratio"`
}

func ratio(a, b float64) float64 {
	if a == 0 || b == 0 {
		return 0
	}
	return a / b
}

// Ratios computes the run's ratios.
func (r Run) Ratios() Ratios {
	var out Ratios
	if r.Scan != nil {
		out.ScanRaw = ratio(r.Scan.MiBps, r.Raw.Rate())
		out.ScanNaive = ratio(r.Scan.MiBps, r.Naive.Rate())
		out.ScanWhole = ratio(r.Scan.MiBps, r.Whole.Rate())
		out.ScanDecode = ratio(r.Scan.MiBps, r.Decode)
	}
	if r.Projection != nil {
		out.ProjectionNaive = ratio(r.Projection.MiBps, r.NaiveProjection.Rate())
		out.ProjectionWhole = ratio(r.Projection.MiBps, r.WholeProjection.Rate())
	}
	out.DecodeArrowGo = ratio(r.Decode, r.ArrowGo)
	if r.Clean != nil && r.Faulty != nil {
		out.FaultySlowdown = ratio(r.Faulty.Seconds, r.Clean.Seconds)
	}
	return out
}

// Dataset describes what was measured.
type Dataset struct {
	URL       string `json:"url"`
	Files     int    `json:"files"`
	Bytes     int64  `json:"bytes"`
	Rows      int64  `json:"rows"`
	RowGroups int    `json:"row_groups"`
	// Projection is Config.Projection; ProjectionBytes are the footers
	// and the projected columns' chunks.
	Projection      []string `json:"projection,omitempty"`
	ProjectionBytes int64    `json:"projection_bytes,omitempty"`
}

// Report is a whole benchmark: every run, and medians.
type Report struct {
	Dataset Dataset `json:"dataset"`
	Runs    []Run   `json:"runs"`
	// Median holds, per figure, the median over runs (each field on its
	// own, so Median is not one of the runs).
	Median       Run    `json:"median"`
	MedianRatios Ratios `json:"median_ratios"`
	// FaultyChecksumsEqual is true when every faulty scan summed the same
	// as the clean scans.
	FaultyChecksumsEqual bool   `json:"faulty_checksums_equal"`
	ChecksumMismatch     string `json:"checksum_mismatch,omitempty"`
}

// Bench is a benchmark of one dataset, opened by New.
type Bench struct {
	cfg       Config
	onlyGiven bool // Config.Only named measurements
	objs      []object
	ds        Dataset
	sweeps    map[string]int // best concurrency found by the first run
}

// New lists the dataset (through scan.Open, so it is the same files scan
// reads) and checks the configuration.
func New(ctx context.Context, cfg Config) (*Bench, error) {
	onlyGiven := len(cfg.Only) > 0
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ds, err := scan.Open(ctx, cfg.Local, cfg.Pattern, scan.Options{Columns: []string{}})
	if err != nil {
		return nil, err
	}
	b := &Bench{cfg: cfg, onlyGiven: onlyGiven, sweeps: map[string]int{}}
	b.ds.URL = cfg.Store.URL(cfg.Pattern)
	for _, f := range ds.Files() {
		b.objs = append(b.objs, object{key: f.Key, size: f.Size})
		b.ds.Files++
		b.ds.Bytes += f.Size
		b.ds.Rows += f.Rows
		b.ds.RowGroups += f.RowGroups
	}
	if len(cfg.Projection) > 0 {
		b.ds.Projection = cfg.Projection
		if b.ds.ProjectionBytes, err = chunkBytes(ctx, cfg.Local, b.objs, cfg.Projection); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Dataset describes the dataset measured.
func (b *Bench) Dataset() Dataset { return b.ds }

func (b *Bench) wants(m string) bool { return slices.Contains(b.cfg.Only, m) }

func (b *Bench) logf(format string, a ...any) {
	if b.cfg.Log != nil {
		fmt.Fprintf(b.cfg.Log, format+"\n", a...)
	}
}

func (b *Bench) mibps(d time.Duration) float64 {
	return float64(b.ds.Bytes) / (1 << 20) / d.Seconds()
}

// projectionMiBps is the rate of a reader of the projection: its column
// chunks and the footers, per second.
func (b *Bench) projectionMiBps(d time.Duration) float64 {
	return float64(b.ds.ProjectionBytes) / (1 << 20) / d.Seconds()
}

// Run makes every run and returns the report. It stops at the first
// error (a failed read is not a slow one).
func (b *Bench) Run(ctx context.Context) (*Report, error) {
	rep := &Report{Dataset: b.ds, FaultyChecksumsEqual: b.cfg.Faulty != nil}
	if !b.cfg.NoWarmup {
		s, err := runScan(ctx, b.cfg.Store, b.cfg.Pattern, scan.Options{Memory: b.cfg.Memory, BatchRows: b.cfg.BatchRows, Mem: b.cfg.Mem}, false)
		if err != nil {
			return rep, fmt.Errorf("warm-up scan: %w", err)
		}
		b.logf("warm-up scan %v", s.Elapsed.Round(time.Millisecond))
	}
	var ref *Checksum
	for i := range b.cfg.Runs {
		r, err := b.run(ctx, i)
		if err != nil {
			return rep, err
		}
		for _, s := range []*ScanResult{r.Clean, r.Faulty} {
			if s == nil || s.Sum == nil {
				continue
			}
			if ref == nil {
				ref = s.Sum
			} else if !ref.Equal(*s.Sum) {
				rep.FaultyChecksumsEqual = false
				rep.ChecksumMismatch = ref.Diff(*s.Sum)
			}
		}
		rep.Runs = append(rep.Runs, r)
	}
	rep.Median, rep.MedianRatios = medians(rep.Runs)
	return rep, nil
}

// settle collects the previous measurement's garbage so the next one
// starts from the same heap.
func settle() { runtime.GC() }

func (b *Bench) run(ctx context.Context, i int) (r Run, err error) {
	n := i + 1
	runCPU := sampleCPU()
	defer func() { r.CPU = cpuSince(runCPU) }()
	sweep := func(name string, cs []int, fn func(c int) (time.Duration, error), into *Sweep) error {
		rate := b.mibps
		if name == NaiveProjection || name == WholeProjection {
			rate = b.projectionMiBps
		}
		if best, ok := b.sweeps[name]; ok && !b.cfg.Resweep {
			cs = []int{best}
		}
		for _, c := range cs {
			settle()
			d, err := fn(c)
			if err != nil {
				return fmt.Errorf("%s at %d: %w", name, c, err)
			}
			into.add(c, rate(d))
			b.logf("run %d: %-6s c=%-3d %8.1f MiB/s (%v)", n, name, c, rate(d), d.Round(time.Millisecond))
		}
		if _, ok := b.sweeps[name]; !ok {
			b.sweeps[name] = into.Best
		}
		return nil
	}
	scanOpts := scan.Options{Memory: b.cfg.Memory, BatchRows: b.cfg.BatchRows, Mem: b.cfg.Mem}
	rowsOK := func(what string, rows int64) error {
		if rows != b.ds.Rows {
			return fmt.Errorf("%s read %d rows, the footers say %d", what, rows, b.ds.Rows)
		}
		return nil
	}

	if b.wants(Raw) {
		err := sweep(Raw, b.cfg.RawConcurrency, func(c int) (time.Duration, error) {
			d, n, err := rawGet(ctx, b.cfg.Store, b.objs, c)
			if err == nil && n != b.ds.Bytes {
				err = fmt.Errorf("read %d bytes of %d", n, b.ds.Bytes)
			}
			return d, err
		}, &r.Raw)
		if err != nil {
			return r, err
		}
	}
	if b.wants(Scan) {
		settle()
		s, err := runScan(ctx, b.cfg.Store, b.cfg.Pattern, scanOpts, b.cfg.Checksum)
		if err == nil {
			err = rowsOK("scan", s.Rows)
		}
		if err != nil {
			return r, fmt.Errorf("scan: %w", err)
		}
		s.MiBps = b.mibps(s.Elapsed)
		r.Scan = &s
		b.logf("run %d: scan          %8.1f MiB/s (%v; %s needed, %s fetched, %d requests, %d retries, %d duplicates; %.1f cores, others %.1f)", n,
			s.MiBps, s.Elapsed.Round(time.Millisecond), mib(s.BytesNeeded), mib(s.BytesFetched), s.Requests, s.Retries, s.Hedges, s.CPU.Own, s.CPU.Others)
	}
	if b.wants(Naive) {
		err := sweep(Naive, b.cfg.FileConcurrency, func(k int) (time.Duration, error) {
			d, rows, err := naive(ctx, b.cfg.Store, b.objs, nil, k, b.cfg.BatchRows, b.cfg.Mem)
			if err == nil {
				err = rowsOK("naive", rows)
			}
			return d, err
		}, &r.Naive)
		if err != nil {
			return r, err
		}
	}
	if b.wants(Whole) {
		err := sweep(Whole, b.cfg.FileConcurrency, func(k int) (time.Duration, error) {
			d, rows, err := whole(ctx, b.cfg.Store, b.objs, nil, k, b.cfg.BatchRows, b.cfg.Mem)
			if err == nil {
				err = rowsOK("whole", rows)
			}
			return d, err
		}, &r.Whole)
		if err != nil {
			return r, err
		}
	}
	if b.wants(Decode) {
		settle()
		m, err := load(ctx, b.cfg.Local, b.objs)
		if err != nil {
			return r, fmt.Errorf("load for decode-only: %w", err)
		}
		// arrow-go's reader first, then scan, over the same bytes; the
		// ratio of the two is this run's.
		settle()
		cpu := sampleCPU()
		d, rows, err := arrowGoOnly(ctx, m, b.cfg.BatchRows, b.cfg.Mem)
		r.ArrowGoCPU = cpuSince(cpu)
		if err == nil {
			err = rowsOK("arrow-go decode-only", rows)
		}
		if err != nil {
			return r, fmt.Errorf("arrow-go decode-only: %w", err)
		}
		r.ArrowGo = b.mibps(d)
		b.logf("run %d: arrow-go      %8.1f MiB/s (%v, %d workers; %.1f cores, others %.1f)", n, r.ArrowGo, d.Round(time.Millisecond),
			runtime.GOMAXPROCS(0), r.ArrowGoCPU.Own, r.ArrowGoCPU.Others)
		settle()
		s, err := decodeOnly(ctx, m, b.cfg.Pattern, scanOpts)
		if err == nil {
			err = rowsOK("decode-only", s.Rows)
		}
		if err != nil {
			return r, fmt.Errorf("decode-only: %w", err)
		}
		r.Decode, r.DecodeCPU = b.mibps(s.Elapsed), s.CPU
		b.logf("run %d: decode        %8.1f MiB/s (%v; %.1f cores, others %.1f; %.2fx arrow-go)", n, r.Decode, s.Elapsed.Round(time.Millisecond),
			r.DecodeCPU.Own, r.DecodeCPU.Others, ratio(r.Decode, r.ArrowGo))
	}
	if len(b.cfg.Projection) > 0 {
		settle()
		opts := scanOpts
		opts.Columns = b.cfg.Projection
		s, err := runScan(ctx, b.cfg.Store, b.cfg.Pattern, opts, false)
		if err == nil {
			err = rowsOK("projection", s.Rows)
		}
		if err != nil {
			return r, fmt.Errorf("projection: %w", err)
		}
		s.MiBps = b.projectionMiBps(s.Elapsed)
		r.Projection = &s
		b.logf("run %d: projection    %8.1f MiB/s (%v, first batch %v; %s fetched for %s of chunks and footers (%.3fx; scan says %s needed), %d requests)", n,
			s.MiBps, s.Elapsed.Round(time.Millisecond), s.Stats.FirstBatch.Round(time.Millisecond), mib(s.BytesFetched), mib(b.ds.ProjectionBytes),
			ratio(float64(s.BytesFetched), float64(b.ds.ProjectionBytes)), mib(s.BytesNeeded), s.Requests)
		for _, m := range []struct {
			name string
			read func(context.Context, *store.Store, []object, []string, int, int, memory.Allocator) (time.Duration, int64, error)
			into *Sweep
		}{{NaiveProjection, naive, &r.NaiveProjection}, {WholeProjection, whole, &r.WholeProjection}} {
			if !b.wants(m.name) {
				continue
			}
			err := sweep(m.name, b.cfg.FileConcurrency, func(k int) (time.Duration, error) {
				d, rows, err := m.read(ctx, b.cfg.Store, b.objs, b.cfg.Projection, k, b.cfg.BatchRows, b.cfg.Mem)
				if err == nil {
					err = rowsOK(m.name, rows)
				}
				return d, err
			}, m.into)
			if err != nil {
				return r, err
			}
		}
	}
	if b.cfg.Faulty != nil {
		for _, side := range []struct {
			name string
			st   *store.Store
			into **ScanResult
		}{{"clean", b.cfg.Store, &r.Clean}, {"faulty", b.cfg.Faulty, &r.Faulty}} {
			settle()
			s, err := runScan(ctx, side.st, b.cfg.Pattern, scanOpts, true)
			if err == nil {
				err = rowsOK(side.name+" scan", s.Rows)
			}
			if err != nil {
				return r, fmt.Errorf("%s scan: %w", side.name, err)
			}
			s.MiBps = b.mibps(s.Elapsed)
			*side.into = &s
			b.logf("run %d: %-6s scan  %8.1f MiB/s (%v, open %v; %d requests, %d retries, %d duplicates, %s fetched; %.1f cores, others %.1f; %s)",
				n, side.name, s.MiBps, s.Elapsed.Round(time.Millisecond), s.Stats.Open.Round(time.Millisecond), s.Requests, s.Retries, s.Hedges,
				mib(s.BytesFetched), s.CPU.Own, s.CPU.Others, s.Sum)
		}
	}
	return r, nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
