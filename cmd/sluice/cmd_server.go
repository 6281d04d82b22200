package main

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
	f.StringVar(&opts.settings.AccessKey, "access-key", "", "access key to require (default: generated)")
	f.StringVar(&opts.settings.SecretKey, "secret-key", "", "secret key to require (default: generated)")
	f.StringSliceVar(&opts.buckets, "bucket", nil, "bucket(s) to create if missing")
	f.StringVar(&opts.settings.Region, "region", "us-east-1", "region requests must be signed for (a request signed for another is refused naming this one, as S3 does)")
	f.DurationVar(&opts.settings.HeaderTimeout, "header-timeout", s3server.DefaultHeaderTimeout, "time a client may take to send a request's headers")
	f.DurationVar(&opts.settings.IdleTimeout, "idle-timeout", s3server.DefaultIdleTimeout, "close a connection that moves no byte of a body or response, or sends no request, for this long")
	f.IntVar(&opts.settings.MaxConns, "max-conns", s3server.DefaultMaxConns, "connections served at once (more wait)")
	f.IntVar(&opts.settings.MaxConnsPerClient, "max-conns-per-client", 0, "connections served at once to one client, an IPv4 address or IPv6 /64 (more are closed at once; default a quarter of --max-conns)")
	f.StringVar(&opts.settings.BodyRate, "min-body-rate", fmt.Sprintf("%dKiB", s3server.DefaultMinBodyRate>>10), "least pace of a request body per second of waiting for it, after --body-grace (slower: 400 RequestTimeout; 0: none)")
	f.DurationVar(&opts.settings.BodyGrace, "body-grace", s3server.DefaultBodyGrace, "waiting a request body gets before --min-body-rate counts")
	f.BoolVar(&opts.settings.SelfSigned, "tls", false, "serve HTTPS with a certificate made at start, its CA written to DIR/.s3server/ca.pem and printed as AWS_CA_BUNDLE")
	f.StringVar(&opts.settings.CertFile, "tls-cert", "", "serve HTTPS with this certificate (PEM file, chain included; with --tls-key)")
	f.StringVar(&opts.settings.KeyFile, "tls-key", "", "private key of --tls-cert (PEM file)")
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
