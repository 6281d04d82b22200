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
	dir       string
	addr      string
	accessKey string
	secretKey string
	buckets   []string
	limits    s3server.Options
	metrics   string
}

func newServerCommand() *cobra.Command {
	var opts serverOptions
	cmd := &cobra.Command{
		Use:     "serve-s3 --dir DIR",
		Aliases: []string{"server"},
		Short:   "Serve a directory over the S3 protocol (an embedded S3 endpoint)",
		Long: `Serve a directory over the S3 protocol: each top-level directory of DIR is a
bucket, files below it are objects. Supports ListObjects(V2), HEAD, GET (ranges,
part numbers), PUT, copy, multipart upload (part copy too) and DELETE, with
Content-Type and x-amz-meta-* kept, checksums verified and conditional requests;
every other S3 operation (ACLs, tagging, policies, versioning, object lock, ...)
is answered 501 NotImplemented and changes nothing. Nothing outside DIR is
served, even through symbolic links. Every request must be signed (AWS
Signature Version 4 for --region, or 2 as in aws s3 presign URLs) with the
printed keys.
Binds to loopback unless told otherwise, and prints the endpoint and the
credentials to use; runs until interrupted.

Limits against slow or stalled clients (see the flags): headers must arrive
within --header-timeout (default ` + s3server.DefaultHeaderTimeout.String() + `); a connection that moves no byte
of a request body or of a response, or sends no next request, for
--idle-timeout (default ` + s3server.DefaultIdleTimeout.String() + `) is closed; at most --max-conns connections
(default ` + fmt.Sprint(s3server.DefaultMaxConns) + `) are served at once, the others wait; headers are at most
` + fmt.Sprint(s3server.DefaultMaxHeaderSize>>10) + ` KiB. An unauthenticated request is refused before its body is read.`,
		Example: `  sluice serve-s3 --dir ./s3data --addr 127.0.0.1:9000 --bucket demo
  # then, in another shell, with the printed exports:
  sluice ls s3://demo/
  # a server in eu-west-1; clients signing for another region are told so
  # and follow (the aws CLI, the AWS SDKs, sluice):
  sluice serve-s3 --dir ./s3data --region eu-west-1 --bucket demo`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServer(cmd.Context(), cmd.OutOrStdout(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.dir, "dir", "", "directory to serve (required; created if missing)")
	f.StringVar(&opts.addr, "addr", "127.0.0.1:9000", "listen address (port 0 picks a free one)")
	f.StringVar(&opts.accessKey, "access-key", "", "access key to require (default: generated)")
	f.StringVar(&opts.secretKey, "secret-key", "", "secret key to require (default: generated)")
	f.StringSliceVar(&opts.buckets, "bucket", nil, "bucket(s) to create if missing")
	f.StringVar(&opts.limits.Region, "region", "us-east-1", "region requests must be signed for (a request signed for another is refused naming this one, as S3 does)")
	f.DurationVar(&opts.limits.HeaderTimeout, "header-timeout", s3server.DefaultHeaderTimeout, "time a client may take to send a request's headers")
	f.DurationVar(&opts.limits.IdleTimeout, "idle-timeout", s3server.DefaultIdleTimeout, "close a connection that moves no byte of a body or response, or sends no request, for this long")
	f.IntVar(&opts.limits.MaxConns, "max-conns", s3server.DefaultMaxConns, "connections served at once (more wait)")
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
	if opts.limits.Region == "" {
		return usagef("serve-s3: --region must not be empty")
	}
	if opts.limits.HeaderTimeout <= 0 || opts.limits.IdleTimeout <= 0 || opts.limits.MaxConns <= 0 {
		return usagef("serve-s3: --header-timeout, --idle-timeout and --max-conns must be positive")
	}
	so := opts.limits
	so.AccessKey, so.SecretKey = opts.accessKey, opts.secretKey
	reg, stopMetrics, err := startMetrics(out, "serve-s3", opts.metrics, true, "", "")
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
	fmt.Fprintf(out, "  export AWS_ENDPOINT_URL=%s\n  export AWS_ACCESS_KEY_ID=%s\n  export AWS_SECRET_ACCESS_KEY=%s\n  export AWS_REGION=%s\n",
		srv.Endpoint, srv.AccessKey, srv.SecretKey, srv.Region)
	fmt.Fprintln(out, "press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}
