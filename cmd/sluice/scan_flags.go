package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

// scanFlags are the flags of a scan, defined once for sluice scan and for
// the scan stage of sluice run.
type scanFlags struct {
	columns     string
	filter      string
	dict        string
	batchRows   int
	memory      string
	concurrency int
	order       string
	sim         string
	stats       bool
	output      string
	format      string
	quiet       bool
	int96Unit   string
	write       writeFlags // sluice scan only
}

func (o *scanFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.columns, "columns", "", "comma-separated columns to read, in that order (default: all)")
	fs.StringVar(&o.filter, "filter", "", `keep the rows for which an expression is true (see sluice filter --help), e.g. "l_shipdate <= '1998-09-02' and l_shipmode in ('AIR', 'RAIL')"`)
	fs.StringVar(&o.dict, "dict", "", "comma-separated string columns to read as dictionary arrays (for few distinct values: less to decode, pipe and group)")
	fs.IntVar(&o.batchRows, "batch-rows", 64<<10, "most rows in a record batch")
	fs.StringVar(&o.memory, "memory", "", "memory the scan holds: bytes fetched ahead of decoding and decoding's buffers (sluice scan stays within about this + 64 MiB, writing Parquet aside; default 512MiB, in sluice run over a local store what the row groups decoded at once need)")
	fs.IntVar(&o.concurrency, "concurrency", 0, "row groups decoded at once (default: the number of cores)")
	fs.StringVar(&o.order, "order", "", "batch order: arrival (as decoded) or dataset (default: dataset)")
	fs.StringVar(&o.sim, "sim", "", "read through a modelled link, and write -o's object through its latency and bandwidth (see sluice --help): a profile (s3) or ttfb=15ms,stream=90MiB/s,...")
	fs.BoolVar(&o.stats, "stats", false, "print scan and fetch statistics to stderr at the end")
	fs.StringVarP(&o.output, "output", "o", "", "sluice scan only: write the batches to a path or URL ending in "+format.SuffixHelp()+", or - for stdout")
	fs.StringVar(&o.format, "format", "", "sluice scan only: -o's format whatever its name: "+format.NameHelp())
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "sluice scan only: no progress bar")
	o.write.register(fs, "sluice scan only: -o's ")
	fs.StringVar(&o.int96Unit, "int96-unit", "ns", "unit of INT96 timestamps (Spark, Impala): ns holds 1677-2262; us, ms or s hold the dates beyond")
}

// parsed are the flags checked and converted.
type parsedScan struct {
	columns, dict []string
	memory        int64
	order         collect.Order
	profile       sim.Profile
}

func (o *scanFlags) parse(defaultOrder collect.Order) (parsedScan, error) {
	var p parsedScan
	var err error
	if o.memory != "" {
		if p.memory, err = parseMemory(o.memory); err != nil {
			return p, err
		}
	}
	if o.batchRows <= 0 {
		return p, usagef("--batch-rows %d: want at least 1", o.batchRows)
	}
	if o.concurrency < 0 {
		return p, usagef("--concurrency %d: want 0 (the number of cores) or more", o.concurrency)
	}
	if strings.TrimSpace(o.columns) != "" {
		if p.columns, err = splitList("--columns", o.columns); err != nil {
			return p, err
		}
	}
	if o.dict != "" {
		if p.dict, err = splitList("--dict", o.dict); err != nil {
			return p, err
		}
	}
	switch o.int96Unit {
	case "ns", "us", "ms", "s":
	default:
		return p, usagef("--int96-unit %q: want ns, us, ms or s", o.int96Unit)
	}
	p.order = defaultOrder
	if o.order != "" {
		if p.order, err = collect.ParseOrder(o.order); err != nil {
			return p, usagef("--order: %v", err)
		}
	}
	p.profile = globals.profile
	if o.sim != "" {
		if p.profile, err = sim.Parse(o.sim); err != nil {
			return p, usageError{err}
		}
	}
	return p, nil
}

// openStoreSim opens a URL with the global flags and the link model p.
func openStoreSim(ctx context.Context, url string, concurrency int, p sim.Profile) (*store.Store, string, error) {
	// One SDK attempt: scan retries above the store.
	o := globals.storeOptions(concurrency, 1)
	o.Wrap = sim.WrapOption(p)
	return store.Open(ctx, url, o)
}

// scanStage builds the scan stage of a pipeline from its flags.
func (o *scanFlags) scanStage(args []string, sio stageIO) (built, error) {
	if o.output != "" || o.format != "" {
		return built{}, usagef("scan -o, --format: as a stage, the scan's batches go down the pipeline: end it with write")
	}
	p, err := o.parse(collect.Dataset)
	if err != nil {
		return built{}, err
	}
	spareProc(args, p.profile)
	opts := exec.ScanOptions{
		Columns:     p.columns,
		Filter:      o.filter,
		BatchRows:   o.batchRows,
		Memory:      p.memory,
		Concurrency: o.concurrency,
		Dict:        p.dict,
		Arrival:     p.order == collect.Arrival,
		Int96Unit:   o.int96Unit,
	}
	if o.sim != "" {
		opts.Open = sio.stores.withLink(o.sim, p.profile)
	}
	if o.stats {
		stderr := sio.stderr
		opts.Stats = func(url string, st scan.Stats) {
			if len(args) > 1 {
				fmt.Fprintf(stderr, "scan %s:\n", url)
			}
			printScanStats(stderr, st, p.profile.Link)
		}
	}
	return built{source: exec.Scan(args, opts)}, nil
}

// withLink opens URLs through the link model p (named by spec), each
// store once, closed with the set.
func (s *storeSet) withLink(spec string, p sim.Profile) func(ctx context.Context, url string) (*store.Store, string, error) {
	return func(ctx context.Context, url string) (*store.Store, string, error) {
		st, key, err := openStoreSim(ctx, url, maxInFlight, p)
		if err != nil {
			return nil, "", err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		id := spec + "|" + st.URL("")
		if have, ok := s.byBase[id]; ok {
			st.Close()
			return have, key, nil
		}
		s.byBase[id] = st
		return st, key, nil
	}
}

// spareProc gives the Go scheduler one processor more than it has (once
// per process) when a scan reads over a network or a modelled link, unless
// GOMAXPROCS is set. With as many processors as cores, decoders keep them
// all busy, and a goroutine woken by arriving bytes waits for the next
// preemption (up to 10 ms) for one: the link idles. With one more, the
// system's scheduler shares the cores and runs the woken thread at once.
// Measured on 2 cores, 4 M lineitem rows from MinIO through a 150 MiB/s
// link: scan 1.14 s -> 1.01 s (medians of 10), against 0.95-1.0 s for
// fetching the same bytes alone; local scans are left as they are.
func spareProc(urls []string, p sim.Profile) {
	if readsRemote(urls, p) && os.Getenv("GOMAXPROCS") == "" {
		spareProcOnce.Do(func() { runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1) })
	}
}

// readsRemote says whether a scan of urls waits on a network or a
// modelled link.
func readsRemote(urls []string, p sim.Profile) bool {
	for _, u := range urls {
		if strings.HasPrefix(u, "s3://") {
			return true
		}
	}
	return !p.IsNone()
}

var spareProcOnce sync.Once
