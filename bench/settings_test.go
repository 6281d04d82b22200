package bench

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// defaults are sluice bench's flags as given by no one.
func defaults() Settings {
	return Settings{Sizes: []string{"16MiB"}, Concurrency: "8", Retries: 3, Seed: 1, Runs: 1}
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
		{"parts", func(s *Settings) { s.Parts = -1 }, "--parts must not be negative, got -1"},
		{"retries", func(s *Settings) { s.Retries = -1 }, "--retries must not be negative, got -1"},
		{"parts before retries", func(s *Settings) { s.Parts, s.Retries = -1, -1 }, "--parts must not be negative, got -1"},
		{"size read-only", func(s *Settings) { s.ReadOnly, s.SizesGiven = true, true }, "--size does not apply to --read-only (the objects have their sizes)"},
		{"default size read-only", func(s *Settings) { s.ReadOnly = true }, ""},
		{"size zero", func(s *Settings) { s.Sizes = []string{"1MiB", "0"} }, "--size 0: object size must be positive"},
		{"size unit", func(s *Settings) { s.Sizes = []string{"16M"} }, `--size: bad size "16M": want a number with an optional unit, such as 16MiB (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)`},
		{"size negative", func(s *Settings) { s.Sizes = []string{"-1MiB"} }, `--size: bad size "-1MiB": must not be negative`},
		{"no size", func(s *Settings) { s.Sizes = nil }, "no object size given"},
		{"range size zero", func(s *Settings) { s.RangeSize = "0" }, "--range-size 0: must be positive"},
		{"range size unit", func(s *Settings) { s.RangeSize = "8X" }, `--range-size: bad size "8X": want a number with an optional unit, such as 16MiB (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)`},
		{"range size write-only", func(s *Settings) { s.RangeSize, s.WriteOnly = "8MiB", true }, "range size applies to reads, and write-only does none"},
		{"concurrency zero", func(s *Settings) { s.Concurrency = "1,0" }, `--concurrency "1,0": want positive numbers (1,2,4) or auto`},
		{"concurrency empty", func(s *Settings) { s.Concurrency = "" }, `--concurrency "": want positive numbers (1,2,4) or auto`},
		{"concurrency auto", func(s *Settings) { s.Concurrency = " auto " }, ""},
		{"concurrency limit", func(s *Settings) { s.Concurrency = "5000" }, "concurrency must be in 1..4096, got 5000"},
		{"objects", func(s *Settings) { s.Objects = -2 }, "objects must not be negative, got -2"},
		{"prefixes", func(s *Settings) { s.Prefixes = 2000 }, "prefixes must be in 0..1000, got 2000"},
		{"read and write only", func(s *Settings) { s.ReadOnly, s.WriteOnly = true, true }, "read-only and write-only exclude each other"},
	} {
		s := defaults()
		c.edit(&s)
		_, err := s.Config()
		if got := errText(err); got != c.want {
			t.Errorf("%s: Config() = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestSettingsConfigReads(t *testing.T) {
	s := Settings{Objects: 5, Sizes: []string{"1MiB", "500KB"}, Concurrency: "1, 4", RangeSize: "64KiB",
		Parts: 3, Retries: 0, Seed: 7, Prefixes: 2, Keep: true}
	cfg, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Sizes, []int64{1 << 20, 500000}) || !slices.Equal(cfg.Concurrency, []int{1, 4}) ||
		cfg.RangeSize != 64<<10 || cfg.Attempts != 1 || cfg.PartConcurrency != 3 || cfg.Objects != 5 ||
		cfg.Seed != 7 || cfg.Prefixes != 2 || !cfg.Keep || cfg.Auto {
		t.Errorf("Config() = %+v", cfg)
	}
	if got := cfg.MaxConcurrency(); got != 4 {
		t.Errorf("MaxConcurrency() = %d, want 4", got)
	}
	s.Concurrency = "auto"
	if cfg, _ = s.Config(); !cfg.Auto || cfg.MaxConcurrency() != 256 {
		t.Errorf("auto: Auto %v, MaxConcurrency() = %d, want 256", cfg.Auto, cfg.MaxConcurrency())
	}
}

func TestSettingsWorkersConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Settings)
		want string
	}{
		{"two", func(*Settings) {}, ""},
		{"a Config mistake first", func(s *Settings) { s.Sizes, s.Runs = []string{"0"}, 0 }, "--size 0: object size must be positive"},
		{"read-only", func(s *Settings) { s.ReadOnly, s.Workers = true, "two" }, "--workers writes what it reads; --read-only does not apply"},
		{"two concurrencies", func(s *Settings) { s.Concurrency = "1,2" }, "--workers takes one --size and one --concurrency (the workers are what it sweeps)"},
		{"auto", func(s *Settings) { s.Concurrency = "auto" }, "--workers takes one --size and one --concurrency (the workers are what it sweeps)"},
		{"two sizes", func(s *Settings) { s.Sizes = []string{"1MiB", "2MiB"} }, "--workers takes one --size and one --concurrency (the workers are what it sweeps)"},
		{"runs", func(s *Settings) { s.Runs, s.StartDelay = 0, -1 }, "--runs must be at least 1, got 0"},
		{"start delay", func(s *Settings) { s.StartDelay, s.Workers = -time.Second, "two" }, "--start-delay must not be negative, got -1s"},
		{"workers", func(s *Settings) { s.Workers = "two" }, `--workers "two": want positive numbers such as 1,2,4`},
		{"workers zero", func(s *Settings) { s.Workers = "0" }, "--workers: workers must be in 1..1024, got 0"},
		{"workers limit", func(s *Settings) { s.Workers = "1,2000" }, "--workers: workers must be in 1..1024, got 2000"},
	} {
		s := defaults()
		s.Workers = "2"
		c.edit(&s)
		_, err := s.WorkersConfig()
		if got := errText(err); got != c.want {
			t.Errorf("%s: WorkersConfig() = %q, want %q", c.name, got, c.want)
		}
	}
	s := defaults()
	s.Workers, s.Runs, s.StartDelay, s.Keep = "1,3", 2, time.Second, true
	wcfg, err := s.WorkersConfig()
	if err != nil || !slices.Equal(wcfg.Workers, []int{1, 3}) || wcfg.Rounds != 2 || wcfg.StartDelay != time.Second ||
		!wcfg.Keep || !wcfg.Worker.Keep || wcfg.Worker.Sizes[0] != 16<<20 {
		t.Errorf("WorkersConfig() = %+v, %v", wcfg, err)
	}
}

func TestSettingsPredictConfig(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want string
	}{
		{Settings{Predict: "1000,2000", From: "r.jsonl", Prefixes: 4}, ""},
		{Settings{Predict: "x", From: "r.jsonl"}, `--predict "x": want worker counts such as 1000,2000`},
		{Settings{Predict: "0", From: "r.jsonl"}, `--predict "0": want worker counts such as 1000,2000`},
		{Settings{Predict: "1000"}, "--predict needs --from RECORDS (the .jsonl or .csv of a run's --out)"},
		{Settings{Predict: "1000", From: "r.jsonl", Prefixes: -1}, "--prefixes must not be negative, got -1"},
		{Settings{Predict: "1000", From: "r.txt"}, `--from: records file "r.txt": want a .jsonl or .csv name`},
	} {
		cfg, err := c.s.PredictConfig()
		if got := errText(err); got != c.want {
			t.Errorf("%+v: PredictConfig() = %q, want %q", c.s, got, c.want)
		}
		if err == nil && (!slices.Equal(cfg.Workers, []int{1000, 2000}) || cfg.Prefixes != 4) {
			t.Errorf("PredictConfig() = %+v", cfg)
		}
	}
}

func TestWorkerArgs(t *testing.T) {
	w := WorkerSpec{URL: "s3://b/", Run: "sluice-bench-x/r0-k2/", Start: time.Unix(0, 42)}
	s := Settings{Objects: 3, Sizes: []string{"256KiB"}, Concurrency: "2", RangeSize: "100KB", Parts: 2,
		Retries: 1, Seed: 9, Prefixes: 4, Keep: true, Workers: "2", Runs: 1}
	wcfg, err := s.WorkersConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bench", "s3://b/", "--worker-prefix", "sluice-bench-x/r0-k2/", "--worker-records", "s3://b/rec/",
		"--worker-start", "42", "-q", "-n", "3", "--size", "256KiB", "-c", "2", "--retries", "1", "--prefixes", "4",
		"--seed", "9", "--keep", "--range-size", "100000B", "--parts", "2"}
	if got := wcfg.WorkerArgs(w, "s3://b/rec/"); !slices.Equal(got, want) {
		t.Errorf("WorkerArgs:\n got %q\nwant %q", got, want)
	}
	// What the worker reads back is the driver's benchmark.
	back := Settings{Objects: 3, Sizes: []string{"256KiB"}, Concurrency: "2", RangeSize: "100000B", Parts: 2,
		Retries: 1, Seed: 9, Prefixes: 4, Keep: true}
	if cfg, err := back.Config(); err != nil || !slices.Equal(cfg.Sizes, wcfg.Worker.Sizes) || cfg.RangeSize != wcfg.Worker.RangeSize {
		t.Errorf("read back: %+v, %v", cfg, err)
	}
	// A Go caller's Worker that leaves attempts to the default.
	args := WorkersConfig{Worker: Config{Sizes: []int64{1 << 20}, Concurrency: []int{1}, WriteOnly: true}}.WorkerArgs(w, "r/")
	if i := slices.Index(args, "--retries"); i < 0 || args[i+1] != "3" || !slices.Contains(args, "--write-only") {
		t.Errorf("default attempts, write-only: %q", args)
	}
}

// Bind's defaults are the settings of no flags, which Config takes; the
// shorthands reach their fields.
func TestSettingsBind(t *testing.T) {
	var s Settings
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	s.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, defaults()) {
		t.Errorf("Bind's defaults = %+v, want %+v", s, defaults())
	}
	if _, err := s.Config(); err != nil {
		t.Errorf("Config() of the defaults: %v", err)
	}
	if _, err := s.WorkersConfig(); errText(err) != `--workers "": want positive numbers such as 1,2,4` {
		t.Errorf("WorkersConfig() of the defaults: %v", err)
	}
	if err := fs.Parse([]string{"-n", "5", "-s", "1MiB,2MiB", "-c", "auto"}); err != nil {
		t.Fatal(err)
	}
	if s.Objects != 5 || !slices.Equal(s.Sizes, []string{"1MiB", "2MiB"}) || s.Concurrency != "auto" {
		t.Errorf("after -n -s -c: %+v", s)
	}
}
