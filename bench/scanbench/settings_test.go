package scanbench

import (
	"reflect"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/sim"
)

// defaults are sluice bench-scan's flags as given by no one.
func defaults() Settings {
	return Settings{RawConcurrency: "4,8,16,32,64", FileConcurrency: "1,2,4,8", Runs: 3, Size: "1GiB", Files: 8}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestSettingsConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Settings)
		want string
	}{
		{"defaults", func(*Settings) {}, ""},
		{"raw concurrency", func(s *Settings) { s.RawConcurrency, s.Runs = "0,4", 0 }, `--raw-concurrency "0,4": want positive integers separated by commas`},
		{"raw concurrency empty", func(s *Settings) { s.RawConcurrency = "" }, `--raw-concurrency "": want positive integers separated by commas`},
		{"file concurrency", func(s *Settings) { s.FileConcurrency, s.Runs = "a", 0 }, `--file-concurrency "a": want positive integers separated by commas`},
		{"runs", func(s *Settings) { s.Runs, s.Only = 0, "nope" }, "--runs 0: want at least 1"},
		{"runs negative", func(s *Settings) { s.Runs = -3 }, "--runs -3: want at least 1"},
		{"only", func(s *Settings) { s.Only = "raw, nope" }, "--only nope: want some of raw,scan,naive,whole,decode,naive-projection,whole-projection"},
		{"only nothing", func(s *Settings) { s.Only = " , " }, `--only " , " names nothing`},
		{"faults", func(s *Settings) { s.Faults = "slowdown=2" }, `--faults: sim: bad slowdown "2": want a probability in [0,1]`},
		{"faults unknown", func(s *Settings) { s.Faults = "bogus" }, `--faults: sim: unknown profile "bogus" (want s3, none, or fields such as ttfb=15ms,stream=90MiB/s)`},
		{"dataset not read", func(s *Settings) { s.Size = "lots" }, ""},
	} {
		s := defaults()
		c.edit(&s)
		_, _, err := s.Config()
		if got := errText(err); got != c.want {
			t.Errorf("%s: Config() = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSettingsConfigReads(t *testing.T) {
	link, err := sim.Parse("ttfb=1ms")
	if err != nil {
		t.Fatal(err)
	}
	s := Settings{RawConcurrency: "1, 4", FileConcurrency: "2", Runs: 2, Only: "raw,,scan", Projection: " a,b ",
		Link: link, Faults: "reset=0.01"}
	cfg, faulty, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.RawConcurrency, []int{1, 4}) || !slices.Equal(cfg.FileConcurrency, []int{2}) || cfg.Runs != 2 ||
		!slices.Equal(cfg.Only, []string{Raw, Scan}) || !slices.Equal(cfg.Projection, []string{"a", "b"}) ||
		cfg.Sim != "ttfb=1ms" || cfg.Faults != faulty.String() {
		t.Errorf("Config() = %+v", cfg)
	}
	// The faults are added to the link, not in its place.
	if faulty.TTFB != link.TTFB || faulty.Reset != 0.01 {
		t.Errorf("faulty link %v", faulty)
	}
	s.Faults = ""
	if cfg, faulty, _ = s.Config(); cfg.Faults != "" || faulty != (sim.Profile{}) {
		t.Errorf("no faults: %q, %v", cfg.Faults, faulty)
	}
}

func TestSettingsDatasetRows(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Settings)
		rows int64
		want string
	}{
		{"size", func(*Settings) {}, LineitemRows(1 << 30), ""},
		{"rows", func(s *Settings) { s.Rows, s.RowsGiven, s.Size = 40000, true, "lots" }, 40000, ""},
		{"size unit", func(s *Settings) { s.Size = "lots" }, 0, `--size "lots": want a size such as 1GiB`},
		{"size zero", func(s *Settings) { s.Size = "0" }, 0, `--size "0": want a size such as 1GiB`},
		{"rows zero", func(s *Settings) { s.RowsGiven = true }, 0, "--rows 0 --files 8: want at least one row per file"},
		{"fewer rows than files", func(s *Settings) { s.Rows, s.RowsGiven, s.Files = 3, true, 4 }, 0, "--rows 3 --files 4: want at least one row per file"},
		{"no files", func(s *Settings) { s.Files = 0 }, 0, "--rows 33000000 --files 0: want at least one row per file"},
	} {
		s := defaults()
		c.edit(&s)
		rows, err := s.DatasetRows()
		if got := errText(err); got != c.want || rows != c.rows {
			t.Errorf("%s: DatasetRows() = %d, %q; want %d, %q", c.name, rows, got, c.rows, c.want)
		}
	}
}

// Bind's defaults are the settings of no flags, which Config and
// DatasetRows take.
func TestSettingsBind(t *testing.T) {
	var s Settings
	fs := pflag.NewFlagSet("bench-scan", pflag.ContinueOnError)
	s.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, defaults()) {
		t.Errorf("Bind's defaults = %+v, want %+v", s, defaults())
	}
	if _, _, err := s.Config(); err != nil {
		t.Errorf("Config() of the defaults: %v", err)
	}
	if rows, err := s.DatasetRows(); err != nil || rows != LineitemRows(1<<30) {
		t.Errorf("DatasetRows() of the defaults = %d, %v", rows, err)
	}
}
