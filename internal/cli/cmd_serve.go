package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/flightsvc"
	"github.com/sluice-data/sluice/internal/netaddr"
)

type serveOptions struct {
	flightsvc.ServerSettings // the token and the streams' sizes, as the flags spell them
	addr, metrics            string
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
	opts.ServerSettings.Bind(f)
	addMetricsFlag(f, &opts.metrics, "calls by method and status, latency, bytes, batches and rows sent", "one other than loopback needs a token, which scrapes then need too")
	return cmd
}

func runServe(ctx context.Context, out io.Writer, opts serveOptions, urls []string) error {
	so, err := opts.Options()
	if err != nil {
		return usageError{err}
	}
	loopback, err := netaddr.IsLoopback(opts.addr)
	if err != nil {
		return usagef("serve: bad --addr %q: %v", opts.addr, err)
	}
	generated := so.Token == "" && !loopback
	if generated {
		so.Token = flightsvc.NewToken()
	}
	reg, stopMetrics, err := startMetrics(out, "serve", opts.metrics, so.Token != "", so.Token, "give --token (scrapes then need it too)", nil)
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
	so.Metrics = reg
	srv := flightsvc.NewServer(roots, so)

	fmt.Fprintf(out, "sluice serve: Arrow Flight at grpc://%s over", lis.Addr())
	for _, r := range roots {
		fmt.Fprintf(out, " %s", r.Store.URL(r.Prefix))
	}
	fmt.Fprintln(out)
	switch {
	case generated:
		fmt.Fprintf(out, "  every call needs the bearer token (sluice get reads SLUICE_TOKEN):\n  export SLUICE_TOKEN=%s\n", so.Token)
	case so.Token != "":
		fmt.Fprintln(out, "  every call needs the bearer token given by --token")
	}
	fmt.Fprintln(out, "press Ctrl-C to stop")
	if err := srv.ServeContext(ctx, lis, 2*time.Second); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
