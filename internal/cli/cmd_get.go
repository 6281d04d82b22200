package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/flightsvc"
	"github.com/sluice-data/sluice/internal/progress"
)

type getOptions struct {
	flightsvc.GetSettings // what to fetch and where, as the flags spell it
	stats, quiet          bool
}

func newGetCommand() *cobra.Command {
	var opts getOptions
	cmd := &cobra.Command{
		Use:     "get grpc://HOST:PORT DATASET",
		Short:   "Fetch a dataset from an Arrow Flight service (sluice serve-flight), all endpoints in parallel",
		Long:    helpText("get"),
		Example: helpText("get.examples"),
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts, args[0], args[1])
		},
	}
	f := cmd.Flags()
	opts.GetSettings.Bind(f)
	f.BoolVar(&opts.stats, "stats", false, "print fetch statistics to stderr at the end")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress")
	return cmd
}

func runGet(ctx context.Context, out, errOut io.Writer, opts getOptions, addr, dataset string) error {
	if !strings.HasPrefix(addr, "grpc://") && !strings.HasPrefix(addr, "grpc+tcp://") {
		return usagef("get %s: want a grpc://HOST:PORT address", addr)
	}
	if opts.Token == "" {
		opts.Token = os.Getenv("SLUICE_TOKEN")
	}
	gopts, err := opts.Options()
	if err != nil {
		return usageError{err}
	}
	stores := newStoreSet()
	defer stores.Close()
	start := time.Now()
	gopts.Stdout, gopts.OpenOutput = out, stores.Open
	var prog *progress.Bytes
	if opts.Output != "" {
		gopts.Started = func(rows int64) { prog = progress.NewRows("get", rows, opts.quiet) }
		gopts.Wrote = func(rows int64) { prog.Add(rows) }
	}
	res, err := flightsvc.GetTo(ctx, addr, dataset, gopts)
	if prog != nil {
		prog.Done()
	}
	if errors.Is(err, flightsvc.ErrInvalid) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if opts.stats {
		fmt.Fprintf(errOut, "get: %d endpoints, %d batches, %d rows in %v; at most %d batches (%s) held by the collector\n",
			res.Endpoints, res.Batches, res.Rows, time.Since(start).Round(time.Millisecond), res.Peak, humanBytes(res.PeakBytes))
	}
	if opts.Output == "" {
		fmt.Fprintf(out, "%d rows\n", res.Rows)
	}
	return nil
}
