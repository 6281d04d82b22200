package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

type catOptions struct {
	memory string
	stats  bool
}

func newCatCommand() *cobra.Command {
	var opts catOptions
	cmd := &cobra.Command{
		Use:     "cat URL...",
		Short:   "Stream objects to stdout, in order, at full bandwidth",
		Long:    helpText("cat"),
		Example: helpText("cat.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("cat takes one or more URLs (see --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCat(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.memory, "memory", "256MiB", "most bytes held between the network and the output")
	f.BoolVar(&opts.stats, "stats", false, "print fetch statistics to stderr at the end")
	return cmd
}

// maxInFlight is what the fetch scheduler may grow to; the S3 transport
// keeps that many connections.
const maxInFlight = 64

func parseMemory(s string) (int64, error) {
	n, err := bench.ParseSize(s)
	if err != nil {
		return 0, usagef("--memory: %v", err)
	}
	if n < 1<<20 {
		return 0, usagef("--memory %s: want at least 1MiB", s)
	}
	return n, nil
}

func runCat(ctx context.Context, out, errOut io.Writer, opts catOptions, urls []string) error {
	memory, err := parseMemory(opts.memory)
	if err != nil {
		return err
	}
	stores := newRetriedStoreSet()
	defer stores.Close()
	resolved, err := transfer.ResolveAll(ctx, stores.Open, urls)
	if err != nil {
		return err
	}
	// One mapped pool for every store's pages, keeping a budget's worth
	// for the next: fresh memory is most of what a fetch costs in CPU
	// (see fetch.Options.Mem).
	to := transfer.Options{Fetch: fetch.Options{Memory: memory, Mem: mempool.NewMapped(memory)}}
	total, err := transfer.CatSources(ctx, out, resolved, to)
	if opts.stats {
		fmt.Fprintln(errOut, total.String())
	}
	return err
}

// newStoreSet opens each store once, with the global flags.
func newStoreSet() *store.Set {
	return store.NewSet(func(ctx context.Context, url string) (*store.Store, string, error) {
		return globals.openStore(ctx, url, maxInFlight)
	})
}

// newRetriedStoreSet is a store set for a command that retries every
// request it makes itself (fetch, internal/retry), so the SDK's own
// retries are off.
func newRetriedStoreSet() *store.Set {
	return store.NewSet(func(ctx context.Context, url string) (*store.Store, string, error) {
		return globals.openRetried(ctx, url, maxInFlight)
	})
}
