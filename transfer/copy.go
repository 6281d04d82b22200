package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// Options configure Copy and Cat.
type Options struct {
	// Fetch configures the reads: Fetch.Memory is the most bytes held
	// between reading and writing (default 256 MiB), Fetch.Mem where
	// they live (a mapped pool is much cheaper than the Go heap; see
	// fetch.Options.Mem).
	Fetch fetch.Options
	// Progress, when set, hears of bytes moved. Copy counts what the
	// destination took (a multipart upload's parts as they complete), and
	// takes back, as a negative count, what it had counted of an object it
	// writes again after a throttled write. Copy calls it from several
	// goroutines at once.
	Progress func(n int64)
}

func (o Options) progress(n int64) {
	if o.Progress != nil && n != 0 {
		o.Progress(n)
	}
}

// Job is one object to copy and the key it gets at the destination.
type Job struct {
	Src store.ObjectInfo
	Dst string
}

// Jobs names the destination of every object of src (resolved by
// store.Resolve) below dstKey. The one object a key named goes to dstKey
// itself, unless dstIsDir or dstKey is empty or ends in /, where it keeps
// its base name; objects under a prefix or matching a glob keep their
// path below its Root.
func Jobs(src store.Objects, dstKey string, dstIsDir bool) []Job {
	jobs := make([]Job, 0, len(src.List))
	for _, o := range src.List {
		var k string
		switch {
		case src.One && !dstIsDir && dstKey != "" && !strings.HasSuffix(dstKey, "/"):
			k = dstKey
		case src.One:
			k = store.Join(dstKey, store.Base(o.Key))
		default:
			k = store.Join(dstKey, strings.TrimPrefix(o.Key, src.Root))
		}
		jobs = append(jobs, Job{Src: o, Dst: k})
	}
	return jobs
}

// writers is how many destination objects are written at once, so many
// small objects do not wait on one commit round trip each.
const writers = 8

// uploadMemory bounds the parts one writer holds (the S3 driver adapts
// how many are in flight): 7 parts of 8 MiB in flight, as many as one
// upload needs to fill a link, while writers writers of large objects
// stay within a few hundred MiB.
const uploadMemory = 64 << 20

// objectRetry is how often, and after what wait, objects whose write was
// throttled are copied again: each retry costs a whole object, so fewer
// and later than a ranged read's.
var objectRetry = retry.Policy{Retries: 5, Base: 100 * time.Millisecond}

// partRetry retries one part of a multipart upload: a part costs only
// itself again, so the default policy, as fetch's ranged reads have.
var partRetry = retry.Policy{}

// Copy copies every job's object from src to dst. An object becomes
// visible at dst only once all of it is written, so an interrupted or
// failed copy leaves no half-written object behind (objects completed
// before stay). Each object is read from one version; one replaced during
// the copy fails it. An object whose write was throttled (a retryable
// error) is read and written again, with backoff. A job that would
// overwrite its own source is refused (store.KindInvalid) before
// anything is copied. The stats are the reads'.
func Copy(ctx context.Context, src, dst *store.Store, jobs []Job, opts Options) (fetch.Stats, error) {
	for _, j := range jobs {
		if src == dst && j.Src.Key == j.Dst {
			return fetch.Stats{}, &store.Error{Op: "copy", URL: dst.URL(j.Dst), Kind: store.KindInvalid, Err: errors.New("is both source and destination")}
		}
	}
	f := fetch.New(src, opts.Fetch)
	var total fetch.Stats
	for n := 0; ; n++ {
		failed, stats, err := copyPass(ctx, f, dst, jobs, opts)
		total.Add(stats)
		if err != nil || len(failed) == 0 {
			return total, err
		}
		if !objectRetry.Again(failed[0].err, n) {
			return total, failed[0].err
		}
		jobs = jobs[:0:0]
		for _, fj := range failed {
			opts.progress(-fj.written)
			jobs = append(jobs, fj.job)
		}
		if err := objectRetry.Wait(ctx, n+1); err != nil {
			return total, err
		}
	}
}

// failedJob is an object whose write failed with a retryable error.
type failedJob struct {
	job     Job
	written int64 // counted by Progress
	err     error
}

// copyPass streams every job's object through one fetch plan, in order,
// and hands each object's units to a writer of its own; up to writers
// objects are written at once. Units not yet written hold the plan's
// memory budget, so slow writes slow the reads rather than grow memory.
func copyPass(ctx context.Context, f *fetch.Fetcher, dst *store.Store, jobs []Job, opts Options) ([]failedJob, fetch.Stats, error) {
	objects := make([]store.ObjectInfo, len(jobs))
	for i, j := range jobs {
		objects[i] = j.Src
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writers)
	p := f.Plan(gctx, windowRequests(objects))
	defer p.Close()

	var mu sync.Mutex
	var failed []failedJob
	write := func(job Job, ch <-chan *fetch.Unit) error {
		n, err := copyObject(gctx, dst, job, ch, opts)
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
				cur = make(chan *fetch.Unit, max(1, (jobs[i].Src.Size+Window-1)/Window))
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
	slices.SortFunc(failed, func(a, b failedJob) int { return strings.Compare(a.job.Dst, b.job.Dst) })
	return failed, stats, writeErr
}

// copyObject writes the units of one object, in order, and commits it
// only if every byte arrived. It always drains ch, releasing every unit.
// Progress hears of bytes as the destination takes them, not as they are
// buffered; stored is what it heard of.
func copyObject(ctx context.Context, dst *store.Store, job Job, ch <-chan *fetch.Unit, opts Options) (stored int64, err error) {
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
	w, err = dst.NewWriter(ctx, job.Dst, store.WriteOptions{Size: job.Src.Size, Memory: uploadMemory, Retry: partRetry.Do, Stored: func(n int64) {
		took.Add(n)
		opts.progress(n)
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
	if n != job.Src.Size {
		return 0, fmt.Errorf("copy %s: read %d of %d bytes", dst.URL(job.Dst), n, job.Src.Size)
	}
	return 0, w.Close()
}
