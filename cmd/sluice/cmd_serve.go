package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/flightsvc"
	"github.com/sluice-data/sluice/internal/netaddr"
)

type serveOptions struct {
	addr        string
	token       string
	memory      string
	concurrency int
	pieceSize   string
	metrics     string
}

func newServeCommand() *cobra.Command {
	var opts serveOptions
	cmd := &cobra.Command{
		Use:     "serve-flight ROOT_URL...",
		Aliases: []string{"serve"},
		Short:   "Serve the Parquet datasets under roots over Arrow Flight (sluice get reads them)",
		Long:    helpText("serve-flight"),
		Example: helpText("serve-flight.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("serve takes one or more root URLs (see --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), cmd.OutOrStdout(), opts, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.addr, "addr", "127.0.0.1:8815", "listen address (port 0 picks a free one)")
	f.StringVar(&opts.token, "token", "", "bearer token to require (default: none on loopback, else generated)")
	f.StringVar(&opts.memory, "memory", "64MiB", "memory each stream's scan holds: bytes fetched ahead of decoding and decoding's buffers (at least one row group's worth)")
	f.IntVar(&opts.concurrency, "concurrency", 2, "row groups one stream decodes at once (an ordered stream holds at most that many ahead of the one due)")
	f.StringVar(&opts.pieceSize, "piece-size", "64MiB", "bytes read per endpoint a large file is cut into (whole row groups)")
	addMetricsFlag(f, &opts.metrics, "calls by method and status, latency, bytes, batches and rows sent", "one other than loopback needs a token, which scrapes then need too")
	return cmd
}

func runServe(ctx context.Context, out io.Writer, opts serveOptions, urls []string) error {
	memory, err := parseMemory(opts.memory)
	if err != nil {
		return err
	}
	if opts.concurrency < 1 {
		return usagef("--concurrency %d: want at least 1", opts.concurrency)
	}
	pieceSize, err := bench.ParseSize(opts.pieceSize)
	if err == nil && pieceSize < 1 {
		err = fmt.Errorf("want at least 1B")
	}
	if err != nil {
		return usagef("--piece-size: %v", err)
	}
	loopback, err := netaddr.IsLoopback(opts.addr)
	if err != nil {
		return usagef("serve: bad --addr %q: %v", opts.addr, err)
	}
	token, generated := opts.token, false
	if token == "" && !loopback {
		token, generated = flightsvc.NewToken(), true
	}
	reg, stopMetrics, err := startMetrics(out, "serve", opts.metrics, token != "", token, "give --token (scrapes then need it too)", nil)
	if err != nil {
		return err
	}
	defer stopMetrics()
	var roots []flightsvc.Root
	for _, u := range urls {
		st, key, err := globals.openStore(ctx, u, maxInFlight)
		if err != nil {
			return err
		}
		defer st.Close()
		if err := flightsvc.CheckRoot(ctx, st, key); err != nil {
			return err
		}
		roots = append(roots, flightsvc.Root{Store: st, Prefix: key})
	}
	lis, err := net.Listen("tcp", opts.addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := flightsvc.NewServer(roots, flightsvc.ServerOptions{Token: token, Memory: memory, Concurrency: opts.concurrency, PieceBytes: pieceSize, Metrics: reg})

	fmt.Fprintf(out, "sluice serve: Arrow Flight at grpc://%s over", lis.Addr())
	for _, r := range roots {
		fmt.Fprintf(out, " %s", r.Store.URL(r.Prefix))
	}
	fmt.Fprintln(out)
	switch {
	case generated:
		fmt.Fprintf(out, "  every call needs the bearer token (sluice get reads SLUICE_TOKEN):\n  export SLUICE_TOKEN=%s\n", token)
	case token != "":
		fmt.Fprintln(out, "  every call needs the bearer token given by --token")
	}
	fmt.Fprintln(out, "press Ctrl-C to stop")
	if err := srv.ServeContext(ctx, lis, 2*time.Second); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
