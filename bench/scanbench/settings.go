package scanbench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/internal/intlist"
	"github.com/sluice-data/sluice/internal/size"
	"github.com/sluice-data/sluice/sim"
)

// Settings is a benchmark as sluice bench-scan's command line spells it:
// lists as text, and faults to add to the link. Config and DatasetRows
// read and check it, and their errors name the flags (--only, --runs),
// the terms the person wrote in; New checks a Config a Go caller built.
type Settings struct {
	// RawConcurrency and FileConcurrency are lists such as 4,8,16.
	RawConcurrency, FileConcurrency string
	Runs                            int
	// Only and Projection are comma-separated names.
	Only, Projection string
	// Link is the model of the store's link; Faults, when set, are added
	// to it for Config.Faulty (WithFaults).
	Link   sim.Profile
	Faults string
	// Size, or Rows when RowsGiven, and Files shape the lineitem dataset
	// to generate when none is given (DatasetRows, Lineitem).
	Size      string
	Rows      int64
	RowsGiven bool
	Files     int
}

// Bind defines sluice bench-scan's flags for what to measure on fs,
// bound to s's fields, with their defaults. They are defined here,
// beside the checks that name them, so that every command that takes
// them defines them once, as plan.BindScan does a scan's; Link and
// RowsGiven are the caller's to set (fs.Changed("rows")).
func (s *Settings) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&s.Size, "size", "1GiB", "size of the generated dataset (without URL)")
	fs.Int64Var(&s.Rows, "rows", 0, "rows of the generated dataset, instead of --size")
	fs.IntVar(&s.Files, "files", 8, "files of the generated dataset")
	fs.IntVar(&s.Runs, "runs", 3, "runs; figures are medians over them")
	fs.StringVar(&s.Only, "only", "", "measure only these, comma-separated: "+strings.Join(All(), ","))
	fs.StringVar(&s.RawConcurrency, "raw-concurrency", "4,8,16,32,64", "requests in flight to try raw GETs at")
	fs.StringVar(&s.FileConcurrency, "file-concurrency", "1,2,4,8", "files at once to try the naive and whole-object readers at")
	fs.StringVar(&s.Projection, "projection", "", "also scan only these columns (and read them with the naive and whole-object readers): bytes fetched against their chunks and footers, and time")
	fs.StringVar(&s.Faults, "faults", "", "also scan with these faults added to --sim, e.g. slowdown=0.05,reset=0.01,stall=0.01:10s")
}

// Config reads s into the Config fields it names (Runs, Only, the
// concurrencies, Projection, Sim and Faults), and returns the faulty
// link to open Config.Faulty behind (none without Faults).
func (s Settings) Config() (Config, sim.Profile, error) {
	var faulty sim.Profile
	cfg := Config{Runs: s.Runs, Only: names(s.Only), Projection: names(s.Projection), Sim: s.Link.String()}
	var ok bool
	if cfg.RawConcurrency, ok = intlist.Parse(s.RawConcurrency, 1); !ok {
		return cfg, faulty, fmt.Errorf("--raw-concurrency %q: want positive integers separated by commas", s.RawConcurrency)
	}
	if cfg.FileConcurrency, ok = intlist.Parse(s.FileConcurrency, 1); !ok {
		return cfg, faulty, fmt.Errorf("--file-concurrency %q: want positive integers separated by commas", s.FileConcurrency)
	}
	if s.Runs <= 0 {
		return cfg, faulty, fmt.Errorf("--runs %d: want at least 1", s.Runs)
	}
	for _, m := range cfg.Only {
		if !slices.Contains(All(), m) {
			return cfg, faulty, fmt.Errorf("--only %s: want some of %s", m, strings.Join(All(), ","))
		}
	}
	if s.Only != "" && len(cfg.Only) == 0 {
		return cfg, faulty, fmt.Errorf("--only %q names nothing", s.Only)
	}
	if s.Faults != "" {
		var err error
		if faulty, err = WithFaults(s.Link, s.Faults); err != nil {
			return cfg, faulty, fmt.Errorf("--faults: %w", err)
		}
		cfg.Faults = faulty.String()
	}
	return cfg, faulty, nil
}

// DatasetRows is how many rows the generated dataset has: Rows, or what
// Size of lineitem holds (LineitemRows), at least one for each of Files.
func (s Settings) DatasetRows() (int64, error) {
	rows := s.Rows
	if !s.RowsGiven {
		n, err := size.Parse(s.Size)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("--size %q: want a size such as 1GiB", s.Size)
		}
		rows = LineitemRows(n)
	}
	if rows <= 0 || s.Files <= 0 || int64(s.Files) > rows {
		return 0, fmt.Errorf("--rows %d --files %d: want at least one row per file", rows, s.Files)
	}
	return rows, nil
}

// WithFaults is link with faults (a sim spec such as
// slowdown=0.05,reset=0.01) added: the faulty scan crosses the same link
// as the clean one, so their times differ by what the faults cost.
func WithFaults(link sim.Profile, faults string) (sim.Profile, error) {
	if !link.IsNone() {
		faults = link.String() + "," + faults
	}
	return sim.Parse(faults)
}

// names reads a comma-separated list of names, dropping empty ones.
func names(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
