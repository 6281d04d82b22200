package main

import (
	"io"

	"github.com/sluice-data/sluice/bench"
)

// runBenchPredict is `sluice bench --predict W --from RECORDS`: the scale
// model over a measured run's records. The per-prefix limits are --sim's
// reqlimit when it has one, else S3's.
func runBenchPredict(out io.Writer, opts benchOptions) error {
	cfg := bench.PredictConfig{Prefixes: opts.prefixes, ReqWrite: globals.profile.ReqWrite,
		ReqRead: globals.profile.ReqRead, PrefixDepth: globals.profile.PrefixDepth}
	var ok bool
	if cfg.Workers, ok = ints(opts.predict, 1); !ok {
		return usagef("bench: --predict %q: want worker counts such as 1000,2000", opts.predict)
	}
	if opts.from == "" {
		return usagef("bench: --predict needs --from RECORDS (the .jsonl or .csv of a run's --out)")
	}
	if opts.prefixes < 0 {
		return usagef("bench: --prefixes must not be negative, got %d", opts.prefixes)
	}
	if _, err := bench.RecordFormat(opts.from); err != nil {
		return usagef("bench: --from: %v", err)
	}
	return bench.PredictFrom(out, opts.from, cfg, opts.json)
}
