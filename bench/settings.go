package bench

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/internal/intlist"
)

// Settings is a benchmark as sluice bench's command line spells it: sizes
// and lists as text, the way a person writes them. Config, WorkersConfig
// and PredictConfig read and check it, and their errors name the flags
// (--size, --workers), the terms the person wrote in; Config.Validate and
// WorkersConfig.Validate check what a Go caller builds directly.
type Settings struct {
	// Objects per cell (--objects).
	Objects int
	// Sizes are the object sizes as ParseSize reads them (--size);
	// SizesGiven says a person chose them, rather than their default,
	// which ReadOnly refuses (the objects have their sizes).
	Sizes      []string
	SizesGiven bool
	// Concurrency is a list (1,2,4) or auto (--concurrency).
	Concurrency string
	// RangeSize, when set, is a size as ParseSize reads it (--range-size).
	RangeSize string
	// Parts is Config.PartConcurrency (--parts), Retries are
	// Config.Attempts less one (--retries).
	Parts, Retries int
	Seed           uint64
	Prefixes       int
	ReadOnly       bool
	WriteOnly      bool
	Keep           bool

	// Workers (--workers), a list, fans the benchmark out over worker
	// processes: Runs rounds, StartDelay as WorkersConfig's.
	Workers    string
	Runs       int
	StartDelay time.Duration

	// Predict is the worker counts the scale model predicts for
	// (--predict), From the records of the measured run it reads (--from).
	Predict, From string
}

// Bind defines sluice bench's flags on fs, bound to s's fields, with
// their defaults. They are defined here, beside the checks that name
// them, so that every command that takes them defines them once, as
// plan.BindScan does a scan's; SizesGiven is the caller's to set
// (fs.Changed("size")).
func (s *Settings) Bind(fs *pflag.FlagSet) {
	fs.IntVarP(&s.Objects, "objects", "n", 0, "objects per cell (default: max(16, 4 x concurrency); with --read-only, all)")
	fs.StringSliceVarP(&s.Sizes, "size", "s", []string{"16MiB"}, "object size(s), such as 1MiB,16MiB,1GiB or 500KB")
	fs.StringVarP(&s.Concurrency, "concurrency", "c", "8", "requests in flight: a number, a list (1,2,4,8), or auto")
	fs.StringVar(&s.RangeSize, "range-size", "", "read each object as parallel ranged GETs of this size (such as 8MiB)")
	fs.IntVar(&s.Parts, "parts", 0, "parts of one object uploaded at once when a write is multipart (objects over 8MiB; 0: the store adapts it, from 4)")
	fs.BoolVar(&s.ReadOnly, "read-only", false, "read the objects already under URL; write nothing")
	fs.BoolVar(&s.WriteOnly, "write-only", false, "only write (and delete, unless --keep)")
	fs.BoolVar(&s.Keep, "keep", false, "keep the objects written and print where they are")
	fs.IntVar(&s.Retries, "retries", 3, "retries of a request that failed with a retryable error")
	fs.Uint64Var(&s.Seed, "seed", 1, "seed of the object bytes")
	fs.IntVar(&s.Prefixes, "prefixes", 0, "spread each cell's objects over this many sub-prefixes (p000/, p001/, ...)")
	fs.StringVar(&s.Workers, "workers", "", "run from this many worker processes at once, each behind its own --sim link; a list (1,2,4) sweeps")
	fs.IntVar(&s.Runs, "runs", 1, "with --workers: rounds of the sweep; figures are medians over rounds")
	fs.StringVar(&s.Predict, "predict", "", "scale model: predict for these worker counts (1000,2000) from --from's records; no URL")
	fs.StringVar(&s.From, "from", "", "with --predict: the records (.jsonl or .csv) of a measured run (--out)")
	fs.DurationVar(&s.StartDelay, "start-delay", 0, "with --workers: how long the workers get to start before they all begin (default 500ms + 25ms a worker; on slurm or kubernetes 10s + 100ms a worker)")
}

// Config reads s into a Config: the first mistake, in flag terms, or
// whatever Config.Validate finds.
func (s Settings) Config() (Config, error) {
	cfg := Config{
		Objects: s.Objects, ReadOnly: s.ReadOnly, WriteOnly: s.WriteOnly, Keep: s.Keep,
		Attempts: s.Retries + 1, Seed: s.Seed, Prefixes: s.Prefixes, PartConcurrency: s.Parts,
	}
	switch {
	case s.Parts < 0:
		return cfg, fmt.Errorf("--parts must not be negative, got %d", s.Parts)
	case s.Retries < 0:
		return cfg, fmt.Errorf("--retries must not be negative, got %d", s.Retries)
	case s.ReadOnly && s.SizesGiven:
		return cfg, errors.New("--size does not apply to --read-only (the objects have their sizes)")
	}
	if !s.ReadOnly {
		for _, v := range s.Sizes {
			n, err := ParseSize(v)
			if err != nil {
				return cfg, fmt.Errorf("--size: %w", err)
			}
			if n <= 0 {
				return cfg, fmt.Errorf("--size %s: object size must be positive", v)
			}
			cfg.Sizes = append(cfg.Sizes, n)
		}
	}
	if s.RangeSize != "" {
		n, err := ParseSize(s.RangeSize)
		if err != nil {
			return cfg, fmt.Errorf("--range-size: %w", err)
		}
		if n <= 0 {
			return cfg, fmt.Errorf("--range-size %s: must be positive", s.RangeSize)
		}
		cfg.RangeSize = n
	}
	if strings.TrimSpace(s.Concurrency) == "auto" {
		cfg.Auto = true
	} else {
		var ok bool
		if cfg.Concurrency, ok = intlist.Parse(s.Concurrency, 1); !ok {
			return cfg, fmt.Errorf("--concurrency %q: want positive numbers (1,2,4) or auto", s.Concurrency)
		}
	}
	return cfg, cfg.Validate()
}

// WorkersConfig reads s into a WorkersConfig whose Worker is s.Config():
// the first mistake, in flag terms, or whatever WorkersConfig.Validate
// finds.
func (s Settings) WorkersConfig() (WorkersConfig, error) {
	cfg, err := s.Config()
	if err != nil {
		return WorkersConfig{}, err
	}
	wcfg := WorkersConfig{Rounds: s.Runs, Keep: s.Keep, StartDelay: s.StartDelay, Worker: cfg}
	switch {
	case cfg.ReadOnly:
		return wcfg, errors.New("--workers writes what it reads; --read-only does not apply")
	case cfg.Auto || len(cfg.Concurrency) != 1 || len(cfg.Sizes) != 1:
		return wcfg, errors.New("--workers takes one --size and one --concurrency (the workers are what it sweeps)")
	case s.Runs < 1:
		return wcfg, fmt.Errorf("--runs must be at least 1, got %d", s.Runs)
	case s.StartDelay < 0:
		return wcfg, fmt.Errorf("--start-delay must not be negative, got %v", s.StartDelay)
	}
	var ok bool
	if wcfg.Workers, ok = intlist.Parse(s.Workers, 0); !ok {
		return wcfg, fmt.Errorf("--workers %q: want positive numbers such as 1,2,4", s.Workers)
	}
	if err := wcfg.Validate(); err != nil {
		return wcfg, fmt.Errorf("--workers: %w", err)
	}
	return wcfg, nil
}

// PredictConfig reads s's Predict, From and Prefixes into a
// PredictConfig (the link's request limits are the caller's to add), and
// checks that From names a records file PredictFrom can read.
func (s Settings) PredictConfig() (PredictConfig, error) {
	cfg := PredictConfig{Prefixes: s.Prefixes}
	var ok bool
	if cfg.Workers, ok = intlist.Parse(s.Predict, 1); !ok {
		return cfg, fmt.Errorf("--predict %q: want worker counts such as 1000,2000", s.Predict)
	}
	if s.From == "" {
		return cfg, errors.New("--predict needs --from RECORDS (the .jsonl or .csv of a run's --out)")
	}
	if s.Prefixes < 0 {
		return cfg, fmt.Errorf("--prefixes must not be negative, got %d", s.Prefixes)
	}
	if _, err := RecordFormat(s.From); err != nil {
		return cfg, fmt.Errorf("--from: %w", err)
	}
	return cfg, nil
}

// WorkerArgs are the arguments, after the program's name, of worker w of
// a fanned-out run: sluice bench as a worker, told the run's prefix, when
// to start, where to leave its records (records, as NewExecLauncher
// gives it) and c.Worker as bench's flags. They are the worker protocol:
// the worker reads its Config back with Settings.Config, as the driver
// read its own, so it measures what the driver describes.
func (c WorkersConfig) WorkerArgs(w WorkerSpec, records string) []string {
	cfg := c.Worker
	args := []string{"bench", w.URL, "--worker-prefix", w.Run, "--worker-records", records,
		"--worker-start", strconv.FormatInt(w.Start.UnixNano(), 10), "-q", "-n", strconv.Itoa(cfg.Objects)}
	if len(cfg.Sizes) > 0 {
		args = append(args, "--size", FormatSize(cfg.Sizes[0]))
	}
	if len(cfg.Concurrency) > 0 {
		args = append(args, "-c", strconv.Itoa(cfg.Concurrency[0]))
	}
	args = append(args, "--retries", strconv.Itoa(cfg.withDefaults().Attempts-1),
		"--prefixes", strconv.Itoa(cfg.Prefixes), "--seed", strconv.FormatUint(cfg.Seed, 10))
	if cfg.WriteOnly {
		args = append(args, "--write-only")
	}
	if cfg.Keep {
		args = append(args, "--keep")
	}
	if cfg.RangeSize > 0 {
		args = append(args, "--range-size", FormatSize(cfg.RangeSize))
	}
	if cfg.PartConcurrency > 0 {
		args = append(args, "--parts", strconv.Itoa(cfg.PartConcurrency))
	}
	return args
}
