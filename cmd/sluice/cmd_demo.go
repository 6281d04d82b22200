package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/bench/scanbench"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/s3server"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

type demoOptions struct {
	rows  int64
	files int
	runs  int
	keep  bool
	quiet bool
}

func newDemoCommand() *cobra.Command {
	var opts demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run sluice end to end on an embedded S3 endpoint, with no setup",
		Long: `Show what sluice is for, with no setup and no credentials: start an S3
endpoint inside this process over a temporary directory, write a TPC-H
lineitem dataset to it as Parquet, then read all of it into Arrow twice
through the same modelled link (--sim s3, as from a cloud machine next to
S3): with arrow-go's plain Parquet reader, and with sluice. It ends with how
many times faster sluice was (the median of --runs runs of each, taken in
turn). Everything is removed at the end unless --keep.`,
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
	f.IntVar(&opts.runs, "runs", 3, "times each reader reads the dataset (the median is shown)")
	f.BoolVar(&opts.keep, "keep", false, "keep the temporary directory and print where it is")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress lines while it works")
	return cmd
}

// The demo's lines are written for a person new to sluice: no more than
// 80 columns, no word they would have to look up.
func runDemo(ctx context.Context, out io.Writer, opts demoOptions) error {
	if opts.rows <= 0 || opts.files <= 0 || opts.runs <= 0 {
		return usagef("--rows, --files and --runs: want at least 1")
	}
	dir, err := os.MkdirTemp("", "sluice-demo-")
	if err != nil {
		return err
	}
	if opts.keep {
		defer fmt.Fprintf(out, "The data is kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }

	say("sluice reads Parquet from object storage (S3 and the like) into Arrow.")
	say("This demo reads the same data the usual way and sluice's way.")
	say("")
	srv, err := s3server.Start(ctx, dir, "127.0.0.1:0", s3server.Options{})
	if err != nil {
		return err
	}
	defer srv.Close()
	if err := srv.CreateBucket("demo"); err != nil {
		return err
	}
	say("1. An S3 endpoint, started inside this process (no service to run):")
	say("   %s, bucket \"demo\"", srv.Endpoint)
	say("")

	url := "s3://demo/lineitem/"
	local := store.Options{Endpoint: srv.Endpoint, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	st, prefix, err := store.Open(ctx, url, local)
	if err != nil {
		return err
	}
	defer st.Close()
	say("2. Writing %s rows of TPC-H lineitem (orders' line items, 16", thousands(opts.rows))
	say("   columns) to %s as %d Parquet files...", url, opts.files)
	res, err := gen.Lineitem(ctx, st, prefix, gen.Options{Rows: opts.rows, Files: opts.files, Seed: 1})
	if err != nil {
		return err
	}
	var objs []store.ObjectInfo
	if err := st.Walk(ctx, prefix, func(o store.ObjectInfo) error { objs = append(objs, o); return nil }); err != nil {
		return err
	}
	say("   %s in %d objects, written in %.1f s:", humanBytes(res.Bytes), len(objs), res.Elapsed.Seconds())
	for i, o := range objs {
		if i == 3 && len(objs) > 4 {
			say("   ... and %d more", len(objs)-3)
			break
		}
		say("   %10s  %s", humanBytes(o.Size), path.Base(o.Key))
	}
	say("")

	p, err := sim.Parse("s3")
	if err != nil {
		return err
	}
	say("3. Reading all of it into Arrow, as a machine in the cloud next to S3 would")
	say("   see it: every request waits about %d ms for its first byte (%d ms for", p.TTFB.Milliseconds(), p.TTFBP99.Milliseconds())
	say("   one in a hundred), one connection carries up to %.0f MiB/s. (This", p.Stream/(1<<20))
	say("   link is modelled: sluice's --sim s3 option, usable with any command.)")
	remote := local
	remote.Concurrency, remote.Wrap, remote.Attempts = maxInFlight, sim.WrapOption(p), 1 // scan retries above
	rst, _, err := store.Open(ctx, url, remote)
	if err != nil {
		return err
	}
	defer rst.Close()
	var log io.Writer
	if !opts.quiet {
		fmt.Fprint(out, "   reading")
		log = demoLog{out}
	}
	b, err := scanbench.New(ctx, scanbench.Config{
		Store: rst, Pattern: prefix, Local: st, Runs: opts.runs,
		Only: []string{scanbench.Scan, scanbench.Naive},
		// The plain reader gets every file at once, one goroutine
		// each: more help than a loop over the files would give it.
		FileConcurrency: []int{len(objs)},
		Log:             log,
	})
	if err != nil {
		return err
	}
	rep, err := b.Run(ctx)
	if log != nil {
		say("")
	}
	if err != nil {
		return err
	}
	plain, fast := rep.Median.Naive.Rate(), rep.Median.Scan.MiBps
	secs := func(mibps float64) float64 { return float64(res.Bytes) / (1 << 20) / mibps }
	say("")
	say("%50s%8s  %11s", "", "time", "rate")
	say("   %-46s %6.2f s  %5.1f MiB/s", "arrow-go's plain Parquet reader", secs(plain), plain)
	say("     (all files at once; a request for each column of each row group)")
	say("   %-46s %6.2f s  %5.1f MiB/s", "sluice", secs(fast), fast)
	say("     (few large requests, many at once; decoding on every core while")
	say("     the next bytes arrive)")
	say("")
	say("sluice read it %.1fx faster than a plain Parquet reader, on the same", rep.MedianRatios.ScanNaive)
	if opts.runs == 1 {
		say("link (one run each).")
	} else {
		say("link (median of %d runs each).", opts.runs)
	}
	var decode, fetchWait time.Duration
	for _, r := range rep.Runs {
		decode += r.Scan.Stats.Decode
		fetchWait += r.Scan.Stats.FetchWait
	}
	if decode > 3*fetchWait {
		// The figure is then this machine's cores, not the link: say so.
		total := (decode + fetchWait).Seconds()
		say("Here sluice spent %.0f%% of its time decoding and %.0f%% waiting for bytes:",
			100*decode.Seconds()/total, 100*fetchWait.Seconds()/total)
		say("this machine's %d cores, not the link, set its pace.", runtime.GOMAXPROCS(0))
	}
	say("")
	say("Next: sluice scan --help (read your data: sluice scan s3://bucket/prefix/),")
	say("sluice run --help (pipelines), sluice bench --help (measure your store).")
	return nil
}

// demoLog shows that a run is under way without its figures, which the
// summary gives.
type demoLog struct{ w io.Writer }

func (l demoLog) Write(p []byte) (int, error) {
	fmt.Fprint(l.w, " .")
	return len(p), nil
}

// thousands writes n with commas: 1,000,000.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
