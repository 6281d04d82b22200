package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/s3server"
)

type serverOptions struct {
	dir       string
	addr      string
	accessKey string
	secretKey string
	buckets   []string
}

func newServerCommand() *cobra.Command {
	var opts serverOptions
	cmd := &cobra.Command{
		Use:   "server --dir DIR",
		Short: "Serve a directory over the S3 protocol (an embedded S3 endpoint)",
		Long: `Serve a directory over the S3 protocol: each top-level directory of DIR is a
bucket, files below it are objects. Supports ListObjectsV2, HEAD, ranged GET,
PUT, multipart upload and DELETE. Binds to loopback unless told otherwise,
and prints the endpoint and the credentials to use; runs until interrupted.`,
		Example: `  sluice server --dir ./s3data --addr 127.0.0.1:9000 --bucket demo
  # then, in another shell, with the printed exports:
  sluice ls s3://demo/`,
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
	return cmd
}

func runServer(ctx context.Context, out io.Writer, opts serverOptions) error {
	if opts.dir == "" {
		return usagef("server: --dir is required")
	}
	if host, _, err := net.SplitHostPort(opts.addr); err != nil {
		return usagef("server: bad --addr %q: %v", opts.addr, err)
	} else if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(os.Stderr, "sluice server: warning: %s is reachable from other machines\n", opts.addr)
	}
	srv, err := s3server.Start(ctx, opts.dir, opts.addr, s3server.Options{AccessKey: opts.accessKey, SecretKey: opts.secretKey})
	if err != nil {
		return err
	}
	defer srv.Close()
	for _, b := range opts.buckets {
		if err := srv.CreateBucket(b); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "sluice server: serving %s over S3 at %s (top-level directories are buckets)\n", opts.dir, srv.Endpoint)
	fmt.Fprintf(out, "  export AWS_ENDPOINT_URL=%s\n  export AWS_ACCESS_KEY_ID=%s\n  export AWS_SECRET_ACCESS_KEY=%s\n  export AWS_REGION=us-east-1\n",
		srv.Endpoint, srv.AccessKey, srv.SecretKey)
	fmt.Fprintln(out, "press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}
