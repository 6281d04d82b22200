package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/internal/netaddr"
	"github.com/sluice-data/sluice/s3server"
)

type serverOptions struct {
	dir      string
	addr     string
	buckets  []string
	settings s3server.Settings // keys, region, limits and TLS, as the flags spell them
	metrics  string
}

func newServerCommand() *cobra.Command {
	var opts serverOptions
	cmd := &cobra.Command{
		Use:     "serve-s3 --dir DIR",
		Aliases: []string{"server"},
		Short:   "Serve a directory over the S3 protocol (an embedded S3 endpoint)",
		Long:    helpText("serve-s3"),
		Example: helpText("serve-s3.examples"),
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServer(cmd.Context(), cmd.OutOrStdout(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.dir, "dir", "", "directory to serve (required; created if missing)")
	f.StringVar(&opts.addr, "addr", "127.0.0.1:9000", "listen address (port 0 picks a free one)")
	opts.settings.Bind(f)
	f.StringSliceVar(&opts.buckets, "bucket", nil, "bucket(s) to create if missing")
	addMetricsFlag(f, &opts.metrics, "requests by S3 operation and status, latency, bytes", "one other than loopback is warned about, as for --addr")
	return cmd
}

func runServer(ctx context.Context, out io.Writer, opts serverOptions) error {
	if opts.dir == "" {
		return usagef("serve-s3: --dir is required")
	}
	if loopback, err := netaddr.IsLoopback(opts.addr); err != nil {
		return usagef("serve-s3: bad --addr %q: %v", opts.addr, err)
	} else if !loopback {
		fmt.Fprintf(os.Stderr, "sluice serve-s3: warning: %s is reachable from other machines\n", opts.addr)
	}
	so, err := opts.settings.Parse()
	if err != nil {
		return usagef("serve-s3: %v", err)
	}
	reg, stopMetrics, err := startMetrics(out, "serve-s3", opts.metrics, true, "", "", nil)
	if err != nil {
		return err
	}
	defer stopMetrics()
	so.Metrics = reg
	srv, err := s3server.Start(ctx, opts.dir, opts.addr, so)
	if errors.Is(err, syscall.EADDRINUSE) {
		// 9000 is also MinIO's default port.
		return usagef("serve-s3: %s is taken (by another server?): give --addr another port, or 127.0.0.1:0 for a free one", opts.addr)
	}
	if err != nil {
		return err
	}
	defer srv.Close()
	for _, b := range opts.buckets {
		if err := srv.CreateBucket(b); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "sluice serve-s3: serving %s over S3 at %s (top-level directories are buckets)\n", opts.dir, srv.Endpoint)
	for _, kv := range srv.Env() {
		fmt.Fprintf(out, "  export %s\n", kv)
	}
	fmt.Fprintln(out, "press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}
