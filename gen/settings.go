package gen

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Settings size a dataset as sluice gen's command line spells it: Rows and
// Files for Lineitem and Taxi, SF and FileRows for TPCH, the rest for
// both. A Go caller taking sizes as text (its own flags, a config file)
// wants the same checks; Options and TPCHOptions make them, and their
// errors name the flags (--rows, --sf), the terms the person wrote in,
// where Options.validate's name the fields.
type Settings struct {
	Rows         int64
	Files        int
	SF           float64
	FileRows     int64
	Seed         uint64
	RowGroupRows int64
	Concurrency  int
}

// Bind defines sluice gen's flags for a dataset's sizes on fs, bound to
// s's fields, with their defaults. They are defined here, beside the
// checks that name them, so that every command that takes them defines
// them once, as plan.BindScan does a scan's; which apply to which
// dataset is the caller's to check.
func (s *Settings) Bind(fs *pflag.FlagSet) {
	fs.Int64Var(&s.Rows, "rows", 1_000_000, "total rows")
	fs.IntVar(&s.Files, "files", 4, "number of files")
	fs.Uint64Var(&s.Seed, "seed", 1, "random seed")
	fs.Int64Var(&s.RowGroupRows, "row-group-rows", 0, "rows per row group (default: at least 4 row groups per file)")
	fs.IntVar(&s.Concurrency, "concurrency", 0, "files generated at once (default: number of CPUs)")
	fs.Float64Var(&s.SF, "sf", 1, "tpch: scale factor (0.001 or more; fractions allowed)")
	fs.Int64Var(&s.FileRows, "file-rows", 0, "tpch: most rows in a file (default 1048576)")
}

// Options checks s as the sizes of Lineitem or Taxi.
func (s Settings) Options() (Options, error) {
	o := Options{Rows: s.Rows, Files: s.Files, Seed: s.Seed, RowGroupRows: s.RowGroupRows, Concurrency: s.Concurrency}
	switch {
	case s.Rows <= 0:
		return o, fmt.Errorf("--rows must be at least 1, got %d", s.Rows)
	case s.Files <= 0:
		return o, fmt.Errorf("--files must be at least 1, got %d", s.Files)
	}
	return o, s.checkRowGroupRows()
}

// TPCHOptions checks s as the sizes of TPCH.
func (s Settings) TPCHOptions() (TPCHOptions, error) {
	o := TPCHOptions{SF: s.SF, Seed: s.Seed, FileRows: s.FileRows, RowGroupRows: s.RowGroupRows, Concurrency: s.Concurrency}
	switch {
	case !(s.SF >= minSF) || s.SF > 100_000: // NaN too
		return o, fmt.Errorf("--sf must be a scale factor from %g to 100000, got %g", minSF, s.SF)
	case s.FileRows < 0:
		return o, fmt.Errorf("--file-rows must be 0 (the default) or more, got %d", s.FileRows)
	}
	return o, s.checkRowGroupRows()
}

func (s Settings) checkRowGroupRows() error {
	if s.RowGroupRows < 0 {
		return fmt.Errorf("--row-group-rows must be 0 (the default) or more, got %d", s.RowGroupRows)
	}
	return nil
}
