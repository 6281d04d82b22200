package cli

import (
	"io"

	"github.com/sluice-data/sluice/bench"
)

// runBenchPredict is `sluice bench --predict W --from RECORDS`: the scale
// model over a measured run's records. The per-prefix limits are --sim's
// reqlimit when it has one, else S3's.
func runBenchPredict(out io.Writer, opts benchOptions) error {
	cfg, err := opts.PredictConfig()
	if err != nil {
		return usagef("bench: %w", err)
	}
	cfg.ReqWrite, cfg.ReqRead, cfg.PrefixDepth = globals.profile.ReqWrite, globals.profile.ReqRead, globals.profile.PrefixDepth
	return bench.PredictFrom(out, opts.From, cfg, opts.json)
}
