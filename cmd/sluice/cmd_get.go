package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/flightsvc"
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/internal/progress"
)

type getOptions struct {
	columns  string
	filter   string
	order    string
	parallel int
	token    string
	output   string
	format   string
	stats    bool
	quiet    bool
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
	f.StringVar(&opts.columns, "columns", "", "comma-separated columns to fetch, in that order (default: all)")
	f.StringVar(&opts.filter, "filter", "", `keep rows matching comparisons joined by "and" (as for scan)`)
	f.StringVar(&opts.order, "order", "", "batch order: dataset or arrival (default: dataset; arrival into an Arrow IPC file, whose footer lists them in dataset order)")
	f.IntVar(&opts.parallel, "parallel", 8, "endpoints fetched at once")
	f.StringVar(&opts.token, "token", "", "bearer token for the service (default: $SLUICE_TOKEN)")
	f.StringVarP(&opts.output, "output", "o", "", "write to a path or URL ending in "+format.SuffixHelp()+", or - for stdout")
	f.StringVar(&opts.format, "format", "", "-o's format whatever its name: "+format.NameHelp())
	f.BoolVar(&opts.stats, "stats", false, "print fetch statistics to stderr at the end")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress")
	return cmd
}

func runGet(ctx context.Context, out, errOut io.Writer, opts getOptions, addr, dataset string) error {
	if !strings.HasPrefix(addr, "grpc://") && !strings.HasPrefix(addr, "grpc+tcp://") {
		return usagef("get %s: want a grpc://HOST:PORT address", addr)
	}
	order := collect.Dataset
	var err error
	if opts.order != "" {
		if order, err = collect.ParseOrder(opts.order); err != nil {
			return usagef("--order: %v", err)
		}
	}
	if opts.parallel < 1 {
		return usagef("--parallel %d: want at least 1", opts.parallel)
	}
	var columns []string
	if strings.TrimSpace(opts.columns) != "" {
		for _, c := range strings.Split(opts.columns, ",") {
			if c = strings.TrimSpace(c); c == "" {
				return usagef("--columns %q: an empty column name", opts.columns)
			}
			columns = append(columns, c)
		}
	}
	var of format.Format
	switch {
	case opts.output == "":
		if opts.format != "" {
			return usagef("--format %s: without -o nothing is written", opts.format)
		}
	default:
		if of, err = format.Choose(opts.output, opts.format); err != nil {
			return usagef("-o %s: %v", opts.output, err)
		}
	}
	if of.Ordered() && opts.order == "" {
		// The file's footer puts the batches in dataset order; nothing
		// needs to wait for a slow endpoint.
		order = collect.Arrival
	}
	token := opts.token
	if token == "" {
		token = os.Getenv("SLUICE_TOKEN")
	}

	stores := newStoreSet()
	defer stores.Close()
	start := time.Now()
	gopts := flightsvc.GetToOptions{
		GetOptions: flightsvc.GetOptions{Columns: columns, Filter: opts.filter, Order: order, Parallel: opts.parallel, Token: token},
		Output:     opts.output, Format: of, Stdout: out, OpenOutput: stores.Open,
	}
	var prog *progress.Bytes
	if opts.output != "" {
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
	if opts.output == "" {
		fmt.Fprintf(out, "%d rows\n", res.Rows)
	}
	return nil
}
