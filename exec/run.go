package exec

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/sync/errgroup"
)

// Run binds every stage to the schema before it, then runs the pipeline
// in this process with no serialization between stages.
//
// The leading per-batch stages (select, drop, rename, filter) run on
// Options.Workers batches at once, and an aggregation right after them
// summarizes each batch on those workers too; partials are folded and
// batches handed on in stream order, so the result is the same whatever
// the number of workers (and the same as running each stage as its own
// process over Arrow IPC). Stages after that see one batch at a time, in
// order. A sink right after the per-batch stages that can take batches
// out of order (write to an Arrow IPC file, whose footer lists them in
// stream order) gets each as soon as it is mapped instead; the file reads
// back the same.
//
// Errors that come from how the pipeline is written wrap ErrInvalid and
// are found before any data is read from the source's files.
func Run(ctx context.Context, p Pipeline, opts Options) (err error) {
	if p.Source == nil {
		return invalidf("pipeline: no source")
	}
	e := newEnv(opts)
	source := p.Source
	if sc, ok := source.(*scanStage); ok && len(p.Stages) > 0 {
		// A filter right after a scan skips what the scan would skip
		// with the same filter, so both forms fetch the same bytes.
		if f, ok := p.Stages[0].(*filterStage); ok {
			source = sc.withPrune(f.expr)
		}
	}
	src, err := source.open(ctx, e)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := src.Close(); err == nil {
			err = cerr
		}
	}()
	plans, err := bindAll(e, src.Schema(), p.Stages)
	if err != nil {
		return err
	}

	// The parallel front: leading mappers and an aggregation after them.
	front := 0
	for front < len(plans) && plans[front].mapper != nil {
		front++
	}
	var agg aggregator
	tailStart := front
	if front < len(plans) && plans[front].agg != nil {
		agg = plans[front].agg
		tailStart = front + 1
	}
	var ops []operator
	defer func() {
		for _, op := range ops {
			op.release()
		}
		for _, pl := range plans {
			if pl.agg != nil {
				pl.agg.release()
			}
		}
	}()
	var next operator
	for i := len(plans) - 1; i >= tailStart; i-- {
		op, err := plans[i].operator(next)
		if err != nil {
			return err
		}
		ops = append(ops, op)
		next = op
	}
	mappers := make([]mapper, front)
	for i := range front {
		mappers[i] = plans[i].mapper
	}

	var sink arrivalSink
	if len(mappers) > 0 && agg == nil && tailStart == len(plans)-1 {
		sink, _ = arrivalSinkOf(next)
	}
	// Batches may carry their place in the dataset (a stream written in
	// arrival order). Per-batch stages writing a stream pass the places
	// on, a sink that takes any order keys the batches by them, and
	// everything else sees dataset order, restored from them.
	_, toIPC := next.(*ipcSink)
	switch {
	case agg == nil && tailStart == len(plans)-1 && toIPC:
		src = newPositionSource(src, keepPositions, e)
		if front > 0 {
			mappers = []mapper{&positionMapper{mappers: mappers, out: plans[front-1].out, mem: e.mem}}
		}
	case sink != nil:
		ps := newPositionSource(src, keepPositions, e)
		ps.dropEmpty = true
		src = ps
	default:
		src = newPositionSource(src, restoreOrder, e)
	}
	switch {
	case len(mappers) == 0 && agg == nil:
		err = runSerial(ctx, src, next)
	case sink != nil:
		err = runArrival(ctx, e.workers, src, mappers, sink)
	default:
		err = runParallel(ctx, e.workers, src, mappers, agg, next)
	}
	if errors.Is(err, errEnough) {
		return nil
	}
	return err
}

// bindAll checks each stage against the schema before it.
func bindAll(e *env, schema *arrow.Schema, stages []Stage) ([]*plan, error) {
	if len(stages) == 0 {
		return nil, invalidf("pipeline: no stages after the source")
	}
	plans := make([]*plan, len(stages))
	for i, st := range stages {
		pl, err := st.bind(e, schema)
		if err != nil {
			return nil, err
		}
		if pl.out == nil && i != len(stages)-1 {
			return nil, invalidf("%s: writes no stream, so it must be the last stage", pl.name)
		}
		plans[i] = pl
		schema = pl.out
	}
	if schema != nil {
		return nil, invalidf("pipeline: the last stage (%s) writes a stream: end with a sink (write, show, to-csv, partition)", plans[len(plans)-1].name)
	}
	return plans, nil
}

// operator makes the stage's operator, wrapping mappers and aggregations
// that run after an ordered stage.
func (pl *plan) operator(next operator) (operator, error) {
	switch {
	case pl.mapper != nil:
		return &mapOp{m: pl.mapper, next: next}, nil
	case pl.agg != nil:
		return &aggOp{a: pl.agg, next: next}, nil
	}
	return pl.newOp(next)
}

type mapOp struct {
	m    mapper
	next operator
}

func (o *mapOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	out, err := o.m.mapBatch(ctx, rec)
	if err != nil || out == nil {
		return err
	}
	defer out.Release()
	return o.next.push(ctx, out)
}
func (o *mapOp) finish(ctx context.Context) error { return o.next.finish(ctx) }
func (o *mapOp) release()                         {}

type aggOp struct {
	a    aggregator
	next operator
}

func (o *aggOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	p, err := o.a.partial(ctx, rec, nil)
	if err != nil {
		return err
	}
	return o.a.fold(p)
}

func (o *aggOp) finish(ctx context.Context) error {
	if err := o.a.emit(ctx, o.next); err != nil {
		return err
	}
	return o.next.finish(ctx)
}
func (o *aggOp) release() {} // the plan releases the aggregator

func runSerial(ctx context.Context, src Source, op operator) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := src.Next(ctx)
		if err == io.EOF {
			return op.finish(ctx)
		}
		if err != nil {
			return err
		}
		err = op.push(ctx, rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
}

// result is what a worker made of one batch: a mapped batch (or nil) or
// an aggregation partial.
type result struct {
	rec     arrow.RecordBatch
	partial any
	err     error
}

type job struct {
	rec arrow.RecordBatch
	res chan result
}

// runParallel maps batches (and makes aggregation partials) on several
// workers and hands the results on in stream order. At most 2 x workers
// batches are in flight.
func runParallel(ctx context.Context, workers int, src Source, mappers []mapper, agg aggregator, next operator) error {
	g, gctx := errgroup.WithContext(ctx)
	jobs := make(chan job, workers)
	order := make(chan chan result, 2*workers)

	g.Go(func() error {
		defer close(order)
		defer close(jobs)
		for {
			rec, err := src.Next(gctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			res := make(chan result, 1)
			select {
			case order <- res:
			case <-gctx.Done():
				rec.Release()
				return context.Cause(gctx)
			}
			select {
			case jobs <- job{rec, res}:
			case <-gctx.Done():
				rec.Release()
				return context.Cause(gctx)
			}
		}
	})
	for range workers {
		g.Go(func() error {
			for j := range jobs {
				if gctx.Err() != nil {
					j.rec.Release()
					continue
				}
				// A failure travels with its result: the consumer
				// returns it in stream order, and this worker keeps
				// draining jobs so the dispatcher never waits on it.
				j.res <- work(gctx, j.rec, mappers, agg)
			}
			return nil
		})
	}
	// waiting is the result the consumer took from order and waits on;
	// when the run stops first, what its worker sends there is released
	// after Wait below.
	var waiting chan result
	g.Go(func() error {
		for res := range order {
			var r result
			waiting = res
			select {
			case r = <-res:
				waiting = nil
			case <-gctx.Done():
				return context.Cause(gctx)
			}
			if r.err != nil {
				return r.err
			}
			if err := consume(gctx, r, agg, next); err != nil {
				return err
			}
		}
		if err := gctx.Err(); err != nil {
			return err
		}
		if agg != nil {
			if err := agg.emit(gctx, next); err != nil {
				return err
			}
		}
		return next.finish(gctx)
	})
	err := g.Wait()
	// Every goroutine is done: what is left in order, or sent to the
	// result the consumer was waiting on, was made and never consumed.
	if waiting != nil {
		select {
		case r := <-waiting:
			r.release(agg)
		default:
		}
	}
	for res := range order {
		select {
		case r := <-res:
			r.release(agg)
		default:
		}
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, errEnough) {
		return context.Cause(ctx)
	}
	return err
}

func work(ctx context.Context, rec arrow.RecordBatch, mappers []mapper, agg aggregator) result {
	cur := rec
	// A filter right before the aggregation only marks the rows to keep.
	var keep []bool
	if f, ok := lastFilter(mappers); ok && agg != nil {
		mappers = mappers[:len(mappers)-1]
		for _, m := range mappers {
			out, err := m.mapBatch(ctx, cur)
			cur.Release()
			if err != nil {
				return result{err: err}
			}
			if out == nil {
				return result{}
			}
			cur = out
		}
		sc := f.getScratch()
		defer f.scratch.Put(sc)
		keep, all := f.mask(cur, sc)
		if !all && !anyTrue(keep) {
			cur.Release()
			return result{}
		}
		if all {
			keep = nil
		}
		p, err := agg.partial(ctx, cur, keep)
		cur.Release()
		return result{partial: p, err: err}
	}
	for _, m := range mappers {
		out, err := m.mapBatch(ctx, cur)
		cur.Release()
		if err != nil {
			return result{err: err}
		}
		if out == nil {
			return result{}
		}
		cur = out
	}
	if agg == nil {
		return result{rec: cur}
	}
	p, err := agg.partial(ctx, cur, keep)
	cur.Release()
	return result{partial: p, err: err}
}

func lastFilter(mappers []mapper) (*filterer, bool) {
	if len(mappers) == 0 {
		return nil, false
	}
	f, ok := mappers[len(mappers)-1].(*filterer)
	return f, ok
}

func anyTrue(b []bool) bool {
	for _, x := range b {
		if x {
			return true
		}
	}
	return false
}

func consume(ctx context.Context, r result, agg aggregator, next operator) error {
	if agg != nil {
		if r.partial == nil {
			return nil
		}
		return agg.fold(r.partial)
	}
	if r.rec == nil {
		return nil
	}
	defer r.rec.Release()
	return next.push(ctx, r.rec)
}

func (r result) release(agg aggregator) {
	if r.rec != nil {
		r.rec.Release()
	}
	if r.partial != nil && agg != nil {
		agg.discard(r.partial)
	}
}
