package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/store"
)

type cpOptions struct {
	memory string
	stats  bool
	quiet  bool
}

func newCpCommand() *cobra.Command {
	var opts cpOptions
	cmd := &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy an object, or every object under a prefix, into another store",
		Long: `Copy one object, or every object under a prefix, to another location (any
store: s3://, file:// or a path, mem://).

  SRC names an object     DST is the new object's name; if DST ends in / (or
                          is a directory) the object keeps its base name in it
  SRC ends in /, or names a directory or a prefix with objects under it
                          every object under it is copied to DST/<the rest of
                          its key>, keeping the layout below the prefix

Objects are read as parallel ranged GETs through the fetch scheduler and
written through the destination's writers, several objects at once. An
object becomes visible at the destination only once all of it is written,
so an interrupted or failed copy leaves no half-written object behind
(objects completed before the interruption stay). Each source object is
read from one version; one replaced during the copy fails the copy.`,
		Example: `  sluice cp s3://bucket/lineitem/ ./data/lineitem/
  sluice cp ./data/lineitem/part-00000.parquet s3://bucket/copy.parquet
  sluice cp s3://bucket/a/ s3://other/b/ --sim s3 --stats`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCp(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts, args[0], args[1])
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.memory, "memory", "256MiB", "most bytes held between reading and writing")
	f.BoolVar(&opts.stats, "stats", false, "print fetch statistics to stderr at the end")
	f.BoolVarP(&opts.quiet, "quiet", "q", false, "no progress")
	return cmd
}

// cpWriters is how many destination objects are written at once, so many
// small objects do not wait on one commit round trip each.
const cpWriters = 8

// cpUploadMemory bounds the parts one writer holds (the S3 driver adapts
// how many are in flight): 7 parts of 8 MiB in flight, as many as one
// upload needs to fill a link, while cpWriters writers of large objects
// stay within a few hundred MiB.
const cpUploadMemory = 64 << 20

// copyJob is one object to copy.
type copyJob struct {
	src    store.ObjectInfo
	dstKey string
}

func runCp(ctx context.Context, out, errOut io.Writer, opts cpOptions, srcURL, dstURL string) error {
	memory, err := parseMemory(opts.memory)
	if err != nil {
		return err
	}
	stores := newRetriedStoreSet()
	defer stores.Close()
	src, err := resolve(ctx, stores, srcURL)
	if err != nil {
		return err
	}
	dst, dstKey, err := stores.Open(ctx, dstURL)
	if err != nil {
		return err
	}
	jobs := copyJobs(src, dstKey, strings.HasSuffix(dstURL, "/"))
	var total int64
	for _, j := range jobs {
		if src.st == dst && j.src.Key == j.dstKey {
			return usagef("cp: %s is both source and destination", dst.URL(j.dstKey))
		}
		total += j.src.Size
	}

	start := time.Now()
	prog := newProgress("cp", total, opts.quiet)
	f := fetch.New(src.st, fetch.Options{Memory: memory, Mem: mempool.NewMapped(memory)})
	stats, err := copyObjects(ctx, f, dst, jobs, prog.Add)
	prog.Done()
	if opts.stats {
		fmt.Fprintln(errOut, stats.String())
	}
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	fmt.Fprintf(out, "copied %s, %s in %.1fs (%.1f MiB/s) to %s\n",
		plural(len(jobs), "object"), humanBytes(total), secs, float64(total)/(1<<20)/max(secs, 1e-9), dst.URL(dstKey))
	return nil
}

// copyJobs names the destination of every source object. A single named
// object goes to dstKey itself unless dstKey is a directory-like name;
// objects under a prefix keep their path below it.
func copyJobs(src objectGroup, dstKey string, dstIsDir bool) []copyJob {
	var jobs []copyJob
	for _, o := range src.objects {
		var k string
		switch {
		case !src.listed && !dstIsDir && dstKey != "" && !strings.HasSuffix(dstKey, "/"):
			k = dstKey
		case !src.listed:
			k = store.Join(dstKey, store.Base(o.Key))
		default:
			k = store.Join(dstKey, strings.TrimPrefix(o.Key, src.prefix))
		}
		jobs = append(jobs, copyJob{src: o, dstKey: k})
	}
	return jobs
}

// copyObjects streams every job's object through one fetch plan, in order,
// and hands each object's units to a writer of its own; up to cpWriters
// objects are written at once. Units not yet written hold the plan's
// memory budget, so slow writes slow the reads rather than grow memory.
// An object whose write failed with a retryable error (a throttled upload)
// is read and written again, from the same version, with backoff.
func copyObjects(ctx context.Context, f *fetch.Fetcher, dst *store.Store, jobs []copyJob, progress func(int64)) (fetch.Stats, error) {
	var total fetch.Stats
	for n := 0; ; n++ {
		failed, stats, err := copyPass(ctx, f, dst, jobs, progress)
		total.Add(stats)
		if err != nil || len(failed) == 0 {
			return total, err
		}
		if !cpRetry.Again(failed[0].err, n) {
			return total, failed[0].err
		}
		jobs = jobs[:0:0]
		for _, fj := range failed {
			progress(-fj.written)
			jobs = append(jobs, fj.job)
		}
		if err := cpRetry.Wait(ctx, n+1); err != nil {
			return total, err
		}
	}
}

// cpRetry is how often, and after what wait, objects whose write was
// throttled are copied again: each retry costs a whole object, so fewer
// and later than a ranged read's.
var cpRetry = retry.Policy{Retries: 5, Base: 100 * time.Millisecond}

// cpPartRetry retries one part of a multipart upload: a part costs only
// itself again, so the default policy, as fetch's ranged reads have.
var cpPartRetry = retry.Policy{}

// failedJob is an object whose write failed with a retryable error.
type failedJob struct {
	job     copyJob
	written int64 // counted by the progress display
	err     error
}

func copyPass(ctx context.Context, f *fetch.Fetcher, dst *store.Store, jobs []copyJob, progress func(int64)) ([]failedJob, fetch.Stats, error) {
	objects := make([]store.ObjectInfo, len(jobs))
	for i, j := range jobs {
		objects[i] = j.src
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cpWriters)
	p := f.Plan(gctx, windowRequests(objects))
	defer p.Close()

	var mu sync.Mutex
	var failed []failedJob
	write := func(job copyJob, ch <-chan *fetch.Unit) error {
		n, err := copyObject(gctx, dst, job, ch, progress)
		if err != nil && store.IsRetryable(err) && gctx.Err() == nil {
			mu.Lock()
			failed = append(failed, failedJob{job, n, err})
			mu.Unlock()
			return nil
		}
		return err
	}

	var cur chan *fetch.Unit
	curIndex := -1
	readErr := func() error {
		defer func() {
			if cur != nil {
				close(cur)
			}
		}()
		for {
			u, err := p.Next(gctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if i := u.Tag().(int); i != curIndex {
				if cur != nil {
					close(cur)
				}
				// Room for every unit of the object: the reader never
				// waits on a writer, only on the budget.
				cur = make(chan *fetch.Unit, max(1, (jobs[i].src.Size+window-1)/window))
				curIndex = i
				ch, job := cur, jobs[i]
				g.Go(func() error { return write(job, ch) })
			}
			cur <- u
		}
	}()
	writeErr := g.Wait()
	stats := p.Stats()
	if readErr != nil {
		return nil, stats, readErr
	}
	slices.SortFunc(failed, func(a, b failedJob) int { return strings.Compare(a.job.dstKey, b.job.dstKey) })
	return failed, stats, writeErr
}

// copyObject writes the units of one object, in order, and commits it
// only if every byte arrived. It always drains ch, releasing every unit.
// Progress hears of bytes as the destination takes them (a multipart
// upload's parts as they complete), not as they are buffered; stored is
// what it heard of.
func copyObject(ctx context.Context, dst *store.Store, job copyJob, ch <-chan *fetch.Unit, progress func(int64)) (stored int64, err error) {
	var w *store.Writer
	var took atomic.Int64
	defer func() {
		for u := range ch {
			u.Release()
		}
		if w != nil && err != nil {
			_ = w.Abort()
		}
		stored = took.Load() // Abort has returned: nothing more is heard
	}()
	w, err = dst.NewWriter(ctx, job.dstKey, store.WriteOptions{Size: job.src.Size, Memory: cpUploadMemory, RetryPart: cpPartRetry.Do, Stored: func(n int64) {
		took.Add(n)
		progress(n)
	}})
	if err != nil {
		return 0, err
	}
	var n int64
	for u := range ch {
		m, werr := u.WriteTo(w)
		u.Release()
		n += m
		if werr != nil {
			return 0, werr
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if n != job.src.Size {
		return 0, fmt.Errorf("cp %s: read %d of %d bytes", dst.URL(job.dstKey), n, job.src.Size)
	}
	return 0, w.Close()
}
