package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/s3server"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

type demoOptions struct {
	rows  int64
	files int
	keep  bool
	quiet bool
}

func newDemoCommand() *cobra.Command {
	var opts demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run sluice end to end on an embedded S3 endpoint, with no setup",
		Long: `Run the main job with no setup and no credentials: start an embedded S3
endpoint on a free loopback port over a temporary directory, generate a
TPC-H lineitem dataset into it, list it, and say what happened at each step.
Everything is removed at the end unless --keep.`,
		Example: `  sluice demo
  sluice demo --rows 4000000 --files 8 --keep`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), opts)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&opts.rows, "rows", 1_000_000, "lineitem rows to generate")
	f.IntVar(&opts.files, "files", 4, "files to generate")
	f.BoolVar(&opts.keep, "keep", false, "keep the temporary directory and print where it is")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress bars")
	return cmd
}

func runDemo(ctx context.Context, out io.Writer, opts demoOptions) error {
	dir, err := os.MkdirTemp("", "sluice-demo-")
	if err != nil {
		return err
	}
	if opts.keep {
		defer fmt.Fprintf(out, "kept the data in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	step := func(format string, a ...any) { fmt.Fprintf(out, "==> "+format+"\n", a...) }

	srv, err := s3server.Start(ctx, dir, "127.0.0.1:0", s3server.Options{})
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.CreateBucket("demo"); err != nil {
		return err
	}
	step("started an embedded S3 endpoint at %s serving %s (bucket \"demo\")", srv.Endpoint, dir)

	url := "s3://demo/lineitem/"
	st, prefix, err := store.Open(ctx, url, store.Options{
		Endpoint: srv.Endpoint, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
	})
	if err != nil {
		return err
	}
	defer st.Close()

	step("generating %d TPC-H lineitem rows in %d snappy Parquet files into %s", opts.rows, opts.files, url)
	prog := newProgress("gen lineitem", -1, opts.quiet)
	res, err := gen.Lineitem(ctx, st, prefix, gen.Options{Rows: opts.rows, Files: opts.files, Seed: 1, Progress: prog.Add})
	prog.Done()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    %s in %s (%.1f MiB/s through the S3 endpoint)\n",
		humanBytes(res.Bytes), res.Elapsed.Round(time.Millisecond), float64(res.Bytes)/(1<<20)/res.Elapsed.Seconds())

	step("listing %s", url)
	var n, total int64
	err = st.Walk(ctx, prefix, func(o store.ObjectInfo) error {
		n++
		total += o.Size
		fmt.Fprintf(out, "    %12d  %s\n", o.Size, st.URL(o.Key))
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "    %d objects, %s\n", n, humanBytes(total))

	if err := demoBench(ctx, out, srv, step); err != nil {
		return err
	}
	if err := demoScan(ctx, out, srv, step); err != nil {
		return err
	}
	step("done; next: sluice --help, sluice scan --help, sluice run --help, sluice bench --help")
	return nil
}

// demoBench measures the embedded endpoint as if it were S3 seen from an
// instance next to it: the per-stream cap at concurrency 1, and how
// parallel requests lift it.
func demoBench(ctx context.Context, out io.Writer, srv *s3server.Server, step func(string, ...any)) error {
	p, err := sim.Parse("s3")
	if err != nil {
		return err
	}
	st, prefix, err := store.Open(ctx, "s3://demo/bench/", store.Options{
		Endpoint: srv.Endpoint, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
		Concurrency: 16, Wrap: sim.WrapOption(p), Attempts: 1, // bench retries
	})
	if err != nil {
		return err
	}
	defer st.Close()
	step("benchmarking the endpoint under the link profile %q (first byte p50 %v, p99 %v; %.0f MiB/s per stream, %.0f MiB/s link): 16 objects of 4 MiB, write then read",
		p.Name, p.TTFB, p.TTFBP99, p.Stream/(1<<20), p.Link/(1<<20))
	res, err := bench.Run(ctx, st, prefix, bench.Config{Sizes: []int64{4 << 20}, Concurrency: []int{1, 4, 16}, Objects: 16})
	if err != nil {
		return err
	}
	bench.WriteTable(out, res.Summaries)
	fmt.Fprintf(out, "    one stream is capped near %.0f MiB/s; parallel requests fill the link (sluice bench --help)\n", p.Stream/(1<<20))
	return nil
}

// demoScan reads the generated dataset into Arrow through the same link
// model, the way sluice scan does, and shows where the time went.
func demoScan(ctx context.Context, out io.Writer, srv *s3server.Server, step func(string, ...any)) error {
	p, err := sim.Parse("s3")
	if err != nil {
		return err
	}
	st, prefix, err := store.Open(ctx, "s3://demo/lineitem/", store.Options{
		Endpoint: srv.Endpoint, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
		Concurrency: maxInFlight, Wrap: sim.WrapOption(p), Attempts: 1, // scan and fetch retry
	})
	if err != nil {
		return err
	}
	defer st.Close()
	filter := "l_shipdate <= '1998-09-02'"
	step("scanning s3://demo/lineitem/ into Arrow under the same link profile: columns l_returnflag,l_extendedprice, filter %s", filter)
	ds, err := scan.Open(ctx, st, prefix, scan.Options{Columns: []string{"l_returnflag", "l_extendedprice"}, Filter: filter})
	if err != nil {
		return err
	}
	s := ds.Scan(ctx)
	defer s.Close()
	for s.Next() {
		s.Batch().Release()
	}
	if err := s.Err(); err != nil {
		return err
	}
	printScanStats(out, s.Stats(), p.Link)
	return nil
}
