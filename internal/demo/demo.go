// Package demo is sluice demo: a tour for a person new to sluice, with
// no setup and no credentials. It starts an S3 endpoint inside the
// process (package s3server) over a temporary directory, writes a TPC-H
// lineitem dataset to it (package gen), and reads all of it into Arrow
// through a modelled S3 link (package sim) with arrow-go's plain Parquet
// reader and with sluice's scan (package bench/scanbench), then says how
// many times faster sluice was.
//
// It is a demonstration, not a benchmark to quote: for figures to
// compare, see sluice bench-scan and package bench/scanbench.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"time"

	"github.com/sluice-data/sluice/bench/scanbench"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/internal/size"
	"github.com/sluice-data/sluice/internal/spell"
	"github.com/sluice-data/sluice/s3server"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

// Options configure Run.
type Options struct {
	// Rows and Files are the lineitem rows and files to generate.
	Rows  int64
	Files int
	// Runs is how many times each reader reads the dataset; the median
	// is shown.
	Runs int
	// Keep keeps the temporary directory and says where it is.
	Keep bool
	// Quiet leaves out the progress dots while the readers run.
	Quiet bool
	// Concurrency is the connections the modelled link's store keeps
	// (store.Options.Concurrency): as many as the fetch scheduler may
	// have requests in flight.
	Concurrency int
}

// Run runs the demo, writing its lines to out, and removes what it wrote
// unless opts.Keep. The lines are written for a person new to sluice: no
// more than 80 columns, no word they would have to look up.
func Run(ctx context.Context, out io.Writer, opts Options) error {
	if opts.Rows <= 0 || opts.Files <= 0 || opts.Runs <= 0 {
		return errors.New("demo: Rows, Files and Runs: want at least 1")
	}
	dir, err := os.MkdirTemp("", "sluice-demo-")
	if err != nil {
		return err
	}
	if opts.Keep {
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
	say("2. Writing %s rows of TPC-H lineitem (orders' line items, 16", spell.Thousands(opts.Rows))
	say("   columns) to %s as %d Parquet files...", url, opts.Files)
	res, err := gen.Lineitem(ctx, st, prefix, gen.Options{Rows: opts.Rows, Files: opts.Files, Seed: 1})
	if err != nil {
		return err
	}
	var objs []store.ObjectInfo
	if err := st.Walk(ctx, prefix, func(o store.ObjectInfo) error { objs = append(objs, o); return nil }); err != nil {
		return err
	}
	say("   %s in %d objects, written in %.1f s:", size.IEC(res.Bytes), len(objs), res.Elapsed.Seconds())
	for i, o := range objs {
		if i == 3 && len(objs) > 4 {
			say("   ... and %d more", len(objs)-3)
			break
		}
		say("   %10s  %s", size.IEC(o.Size), path.Base(o.Key))
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
	remote.Concurrency, remote.Wrap, remote.Attempts = opts.Concurrency, sim.WrapOption(p), 1 // scan retries above
	rst, _, err := store.Open(ctx, url, remote)
	if err != nil {
		return err
	}
	defer rst.Close()
	var log io.Writer
	if !opts.Quiet {
		fmt.Fprint(out, "   reading")
		log = demoLog{out}
	}
	b, err := scanbench.New(ctx, scanbench.Config{
		Store: rst, Pattern: prefix, Local: st, Runs: opts.Runs,
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
	if opts.Runs == 1 {
		say("link (one run each).")
	} else {
		say("link (median of %d runs each).", opts.Runs)
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
