package scan

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"

	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/store"
)

// Position is a batch's place in its dataset. Sorting batches by (File,
// RowGroup, Batch) restores dataset order; Last says a row group is
// complete, so a consumer reassembling in order knows when to move on.
type Position struct {
	File     int    // index in Dataset.Files (key order)
	Key      string // the file's key in the store
	RowGroup int    // row group within the file
	// Batch counts the batches of the row group as decoded, from 0. With a
	// filter, a batch left with no rows is not delivered (unless it is the
	// last), so the numbers delivered may have gaps.
	Batch int
	// Row is the row of the row group the batch starts at, before filtering.
	Row int64
	// Last marks the final batch of its row group; every row group read
	// delivers one, possibly with zero rows.
	Last bool
}

// Batch is one record batch and its place in the dataset. The consumer
// that receives it from Scanner.Next owns it and must Release it.
type Batch struct {
	arrow.RecordBatch
	Pos Position
}

// errClosed is the cause a scan is cancelled with by Close.
var errClosed = errors.New("scan: closed")

// Scanner is one running scan of a dataset: row groups are fetched in
// dataset order and decoded by Options.Concurrency workers at once (fewer
// when the memory budget cannot hold their buffers), each
// taking the next row group as it finishes one, and batches come out of
// Next in the order they are ready (see Position for restoring dataset
// order), or in dataset order with Options.Ordered. A Scanner is used
// from one goroutine; Close it when done.
type Scanner struct {
	ds     *Dataset
	ctx    context.Context
	cancel context.CancelCauseFunc
	cctx   context.Context // for compute: the allocator, no parallelism of its own
	plan   *fetch.Plan
	out    chan Batch
	wg     sync.WaitGroup
	start  time.Time

	mu     sync.Mutex
	err    error
	closed bool
	end    time.Time // when the last batch was taken (or the scan failed)
	first  time.Time // when the first batch was taken

	cur       Batch
	closeOnce sync.Once
	order     *order // nil unless Options.Ordered

	c counters
}

type counters struct {
	rows, rowsDecoded, batches      atomic.Int64
	fallbacks, fallbackBytes        atomic.Int64
	decode, fetchWait, consumerWait atomic.Int64 // nanoseconds
	flatGroups                      atomic.Int64 // row groups decoded wholly on the flat path (flat.go)
	flatChunks                      atomic.Int64 // column chunks decoded on the flat path
	lateGroups                      atomic.Int64 // row groups decoded by decodeLate
	filterDicts                     atomic.Int64 // column chunks decoded as dictionaries for the filter (filterDict, outDict)
}

// Scan starts reading the dataset. Stop early by Close; the batches
// already delivered stay valid and must still be released.
func (d *Dataset) Scan(ctx context.Context) *Scanner { return d.scan(ctx, d.opts.Ordered) }

// scan starts a scan, in dataset order when ordered.
func (d *Dataset) scan(ctx context.Context, ordered bool) *Scanner {
	ctx, cancel := context.WithCancelCause(ctx)
	ec := compute.DefaultExecCtx()
	ec.NumParallel = 1 // row groups are the unit of parallelism
	workers := d.workersFor(ordered)
	s := &Scanner{
		ds:     d,
		ctx:    ctx,
		cancel: cancel,
		cctx:   compute.WithAllocator(compute.SetExecCtx(ctx, ec), d.opts.Mem),
		out:    make(chan Batch, workers),
		start:  time.Now(),
	}
	reqs := make([]fetch.Request, len(d.groups))
	for i, g := range d.groups {
		reqs[i] = fetch.Request{Key: g.file.key, Ranges: g.ranges, ETag: g.file.etag, Size: g.file.size, Tag: i, Have: g.file.data}
	}
	if ordered {
		s.order = newOrder(d, workers)
	}
	s.plan = d.fetcher.Plan(ctx, reqs)
	s.wg.Add(workers)
	for range workers {
		go s.work()
	}
	go func() {
		s.wg.Wait()
		close(s.out)
	}()
	return s
}

// work decodes row groups until there are none left or the scan stops.
func (s *Scanner) work() {
	defer s.wg.Done()
	fr := &flatReaders{}
	defer fr.release()
	for {
		u, err := s.plan.Next(s.ctx)
		if err == io.EOF {
			return
		}
		if err != nil {
			s.fail(attribute(err, ""))
			return
		}
		i := u.Tag().(int)
		g := s.ds.groups[i]
		if s.order != nil {
			if err := s.waitTurn(i); err != nil {
				u.Release()
				s.fail(context.Cause(s.ctx))
				return
			}
		}
		err = s.decode(u, g, fr)
		u.Release()
		if err != nil {
			if s.ctx.Err() != nil {
				err = context.Cause(s.ctx)
			}
			s.fail(attribute(err, g.file.url))
			return
		}
		if p := s.ds.opts.Progress; p != nil {
			p(g.bytes)
		}
	}
}

// attribute names the file an error is about: the object a fetch or
// storage error names, which is not always the file being decoded (a
// plan that fails on one object fails the reads of every unit), else url
// when it is set.
func attribute(err error, url string) error {
	var fe *FileError
	if errors.As(err, &fe) {
		return fe
	}
	var ce *fetch.ChangedError
	if errors.As(err, &ce) {
		return fileError(ce.URL, ce)
	}
	var se *store.Error
	if errors.As(err, &se) && se.URL != "" {
		return fileError(se.URL, se)
	}
	if url == "" {
		return err
	}
	return fileError(url, err)
}

// fail records the scan's first error and stops it. Errors after Close
// (the cancellations Close causes) are not errors of the scan.
func (s *Scanner) fail(err error) {
	s.mu.Lock()
	if s.err == nil && !s.closed && !errors.Is(err, errClosed) {
		s.err = err
		s.end = time.Now()
	}
	s.mu.Unlock()
	s.cancel(err)
}

// send hands a batch to the consumer, or releases it if the scan stopped.
func (s *Scanner) send(b Batch) error {
	select {
	case s.out <- b:
		return nil
	case <-s.ctx.Done():
		b.Release()
		return context.Cause(s.ctx)
	}
}

// Next waits for the next batch; false means the scan is over (see Err),
// its workers done and none of the allocator's memory held but the
// batches the consumer kept.
func (s *Scanner) Next() bool {
	s.cur = Batch{}
	t := time.Now()
	var b Batch
	var ok bool
	if s.order != nil {
		b, ok = s.nextOrdered()
	} else {
		b, ok = <-s.out
	}
	s.c.consumerWait.Add(int64(time.Since(t)))
	if !ok {
		s.mu.Lock()
		if s.err == nil && !s.closed && s.ctx.Err() != nil {
			s.err = context.Cause(s.ctx)
		}
		if s.end.IsZero() {
			s.end = time.Now()
		}
		s.mu.Unlock()
		return false
	}
	s.cur = b
	if s.c.batches.Load() == 0 {
		s.mu.Lock()
		s.first = time.Now()
		s.mu.Unlock()
	}
	s.c.rows.Add(b.NumRows())
	s.c.batches.Add(1)
	return true
}

// Batch is the batch Next moved to. The caller owns it: Release it when
// done (Retain it first to keep it past that).
func (s *Scanner) Batch() Batch { return s.cur }

// Err is why the scan stopped early: nil after every batch was delivered
// (or after Close), else the first error, naming the file.
func (s *Scanner) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close stops the scan, releases every batch not yet delivered and waits
// for the scan's goroutines. It is safe to call more than once.
func (s *Scanner) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		if s.end.IsZero() {
			s.end = time.Now()
		}
		s.mu.Unlock()
		s.cancel(errClosed)
		for b := range s.out {
			b.Release()
		}
		if s.order != nil {
			s.order.release()
		}
		s.plan.Close()
	})
}
