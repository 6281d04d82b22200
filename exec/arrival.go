package exec

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"
)

// arrivalSink is a sink that can take batches in any order, each with its
// key in the stream (increasing in stream order, with gaps where a batch
// was filtered away: the batch's ordinal, or its Position when the
// source's batches carry one), and still give what pushing them in order
// gives: an Arrow IPC file, whose footer lists the batches in their
// stream order wherever they are stored.
type arrivalSink interface {
	operator
	// takesAnyOrder reports whether pushAt may be used; a stage's
	// operator may take any order for some of its settings only.
	takesAnyOrder() bool
	// pushAt borrows rec, the batch at key.
	pushAt(ctx context.Context, rec arrow.RecordBatch, key []int64) error
}

// arrivalSinkOf is the sink right after the parallel front, when it can
// take the front's batches as they finish.
func arrivalSinkOf(op operator) (arrivalSink, bool) {
	s, ok := op.(arrivalSink)
	if !ok || !s.takesAnyOrder() {
		return nil, false
	}
	return s, true
}

// numbered is a batch with its key in the stream.
type numbered struct {
	rec arrow.RecordBatch
	key []int64
}

// mapped is what a worker made of a numbered batch.
type mapped struct {
	result
	key []int64
}

// runArrival maps batches on several workers and hands each to the sink
// as soon as it is mapped, with its ordinal, so that no batch waits for a
// slower one before it (which the in-order hand-off of runParallel would
// make it do, holding up to its whole window behind one straggler). At
// most 2 x workers batches are in flight.
func runArrival(ctx context.Context, workers int, src Source, mappers []mapper, sink arrivalSink) error {
	g, gctx := errgroup.WithContext(ctx)
	// A slot is taken before a batch is read and given back once the
	// sink has it (or it came to nothing), which bounds the batches in
	// flight; done has room for all of them, so workers never wait on
	// the sink.
	slots := make(chan struct{}, 2*workers)
	jobs := make(chan numbered, workers)
	done := make(chan mapped, 2*workers)

	g.Go(func() error {
		defer close(jobs)
		for ord := int64(0); ; ord++ {
			select {
			case slots <- struct{}{}:
			case <-gctx.Done():
				return context.Cause(gctx)
			}
			rec, err := src.Next(gctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			key, err := arrivalKey(rec, ord)
			if err != nil {
				rec.Release()
				return err
			}
			select {
			case jobs <- numbered{rec, key}:
			case <-gctx.Done():
				rec.Release()
				return context.Cause(gctx)
			}
		}
	})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		g.Go(func() error {
			defer wg.Done()
			for j := range jobs {
				if gctx.Err() != nil {
					j.rec.Release()
					continue
				}
				// A failure travels with its result, and the worker
				// keeps draining jobs so the reader never waits on it.
				r := work(gctx, j.rec, mappers, nil)
				select {
				case done <- mapped{r, j.key}:
				case <-gctx.Done():
					r.release(nil)
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		wg.Wait()
		close(done)
		return nil
	})
	g.Go(func() error {
		for {
			var m mapped
			var ok bool
			select {
			case m, ok = <-done:
			case <-gctx.Done():
				return context.Cause(gctx)
			}
			if !ok {
				break
			}
			<-slots
			if m.err != nil {
				m.release(nil)
				return m.err
			}
			if m.rec == nil {
				continue
			}
			err := sink.pushAt(gctx, m.rec, m.key)
			m.rec.Release()
			if err != nil {
				return err
			}
		}
		if err := gctx.Err(); err != nil {
			return err
		}
		return sink.finish(gctx)
	})
	err := g.Wait()
	// Every goroutine is done and done is closed: what is left in it was
	// mapped and never written.
	for m := range done {
		m.release(nil)
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, errEnough) {
		return context.Cause(ctx)
	}
	return err
}

// arrivalKey is the key of the batch at ordinal ord: its position in the
// dataset when it carries one (a scan in arrival order), else ord after
// the keys {1}, {2}... of batches pushed in order.
func arrivalKey(rec arrow.RecordBatch, ord int64) ([]int64, error) {
	pos, ok, err := PositionOf(rec)
	if err != nil || !ok {
		return []int64{ord + 1}, err
	}
	return []int64{pos.Group, pos.Batch}, nil
}
