package scanbench_test

import (
	"fmt"
	"log"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/bench/scanbench"
)

// Read a benchmark as sluice bench-scan's flags spell it into a checked
// Config (what New takes, with the store holding the dataset), and see a
// bad flag value refused in the flag's own terms.
func ExampleSettings_Config() {
	for _, args := range [][]string{
		{"--runs", "5", "--only", "raw,scan", "--raw-concurrency", "8,32", "--faults", "reset=0.01", "--rows", "40000", "--files", "4"},
		{"--only", "raw,fastest"},
		{"--rows", "3", "--files", "4"},
	} {
		var s scanbench.Settings
		fs := pflag.NewFlagSet("bench-scan", pflag.ContinueOnError)
		s.Bind(fs)
		if err := fs.Parse(args); err != nil {
			log.Fatal(err)
		}
		s.RowsGiven = fs.Changed("rows")
		cfg, faulty, err := s.Config()
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		rows, err := s.DatasetRows()
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("runs %d, only %v, raw concurrency %v, file concurrency %v\n", cfg.Runs, cfg.Only, cfg.RawConcurrency, cfg.FileConcurrency)
		fmt.Printf("faults %q (reset %v), dataset %d rows in %d files\n", cfg.Faults, faulty.Reset, rows, s.Files)
	}
	// Output:
	// runs 5, only [raw scan], raw concurrency [8 32], file concurrency [1 2 4 8]
	// faults "reset=0.01" (reset 0.01), dataset 40000 rows in 4 files
	// error: --only fastest: want some of raw,scan,naive,whole,decode,naive-projection,whole-projection
	// error: --rows 3 --files 4: want at least one row per file
}
