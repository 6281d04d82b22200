package exec

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/internal/arrowsize"
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
	// The shared parts of sub-pipelines live as long as the outermost
	// Run.
	ctx, releaseShared := withShareScope(ctx)
	defer releaseShared()
	// So is the memory budget: its stages and the Runs they start share
	// one.
	if budgetOf(ctx) == nil {
		ctx = withBudget(ctx, newEnv(Options{Memory: opts.Memory}).budget)
	}
	if i := firstProgram(p.Stages); i >= 0 {
		return runProgram(ctx, p, i, opts)
	}
	e := newEnv(opts)
	e.budget = budgetOf(ctx)
	e.memory = e.budget.size
	// Joins read their right sides first, each fetching what is read of
	// it (aggregated first where what follows only counts it: eager.go).
	// One that drops left rows without a match, right after a scan, has
	// the scan skip what its keys cannot match.
	p.Stages = pushIntoJoins(pushWhere(eagerAggs(p.Stages)))
	pruneAt := -1
	if _, ok := p.Source.(*scanStage); ok {
		pruneAt, _ = pruningJoin(p.Stages)
	}
	if at, insert, folds := reducibleJoin(p.Stages, pruneAt); at >= 0 {
		return runReducing(ctx, p, at, insert, folds, opts, e)
	}
	stages, cond, releaseSides, err := readJoinSides(ctx, e, p.Stages, pruneAt)
	if err != nil {
		return err
	}
	defer releaseSides()
	p.Stages = stages
	// Then the scan is told what the stages read, joins knowing now
	// which columns are their right sides'.
	p = PushColumns(p)
	source := p.Source
	sc, isScan := source.(*scanStage)
	if isScan && sc.groupDict == nil {
		if keys := dictKeys(p.Stages); keys != nil {
			c := *sc
			c.groupDict = keys
			sc, source = &c, &c
		}
	}
	if isScan && len(p.Stages) > 0 && sc.prune == "" {
		// A filter right after a scan skips what the scan would skip
		// with the same filter, so both forms fetch the same bytes. (A
		// scan that prunes already is a join's left side, run on its own
		// by cutPrunedSide.)
		var prune []string
		if f, ok := p.Stages[0].(*filterStage); ok {
			prune = append(prune, "("+f.expr+")")
		}
		if cond != "" {
			prune = append(prune, cond)
		}
		if len(prune) > 0 {
			source = sc.withPrune(strings.Join(prune, " and "))
		}
	}
	if ls, ok := source.(*leftStage); ok {
		// The rest of a reducing join's left side, whose right side is
		// read now.
		if js, ok := cuttable(p.Stages, 0); ok {
			if err := ls.l.cut(ctx, e, js, ls.schema); err != nil {
				return err
			}
		}
	}
	if pruneAt >= 0 {
		left, schema, err := cutPrunedSide(ctx, e, Pipeline{Source: source, Stages: p.Stages}, pruneAt, opts)
		if err != nil {
			return err
		}
		if left != nil {
			defer left.stop()
			return Run(ctx, Pipeline{Source: &leftStage{l: left, schema: schema}, Stages: p.Stages[pruneAt:]}, opts)
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
			if pl.done != nil {
				pl.done()
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
	if len(mappers) == 0 && agg == nil {
		err = runSerial(ctx, src, next)
	} else {
		err = runParallel(ctx, e.workers, src, mappers, agg, next, sink)
	}
	if errors.Is(err, errEnough) {
		return nil
	}
	return err
}

// bindAll checks each stage against the schema before it.
func bindAll(e *env, schema *arrow.Schema, stages []Stage) ([]*bound, error) {
	if len(stages) == 0 {
		return nil, invalidf("pipeline: no stages after the source")
	}
	plans := make([]*bound, len(stages))
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
func (pl *bound) operator(next operator) (operator, error) {
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
	if err != nil || p == nil {
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
// an aggregation partial, or the failure to make it, which travels in
// stream order with the others.
type result struct {
	rec     arrow.RecordBatch
	partial any
	err     error
	agg     aggregator // that discards an unfolded partial
	key     []int64    // the batch's key in the source (arrivalKey), for an arrivalSink
}

// Release frees what the result still holds.
func (r result) Release() { r.release(r.agg) }

// NumRows and Bytes size a result in collect's window.
func (r result) NumRows() int64 {
	if r.rec == nil {
		return 0
	}
	return r.rec.NumRows()
}

func (r result) Bytes() int64 {
	if r.rec == nil {
		return 0
	}
	return arrowsize.Record(r.rec)
}

// runParallel maps batches (and makes aggregation partials) on several
// workers with package collect, each source batch a part of its own, and
// hands the results on in stream order: to next, or to the aggregation
// and then next. With a sink that takes any order, each mapped batch
// goes to it as soon as it is made, with its ordinal, so that no batch
// waits for a slower one before it. Either way a batch that finds the
// results ahead of it full waits, so about 3 x workers batches are in
// flight, whatever a straggler does.
func runParallel(ctx context.Context, workers int, src Source, mappers []mapper, agg aggregator, next operator, sink arrivalSink) error {
	order := collect.Dataset
	if sink != nil {
		order = collect.Arrival
	}
	f := collect.Map(ctx, src.Next, func(ctx context.Context, part int, rec arrow.RecordBatch, emit func(result) error) error {
		var key []int64
		if sink != nil {
			// The source batch carries the position; the mapped one may not.
			k, err := arrivalKey(rec, int64(part))
			if err != nil {
				rec.Release()
				return err
			}
			key = k
		}
		r := work(ctx, rec, mappers, agg)
		if r.rec == nil && r.partial == nil && r.err == nil {
			return nil
		}
		r.agg, r.key = agg, key
		return emit(r)
	}, collect.Options{Order: order, Parallel: workers, Window: workers})
	var err error
	for err == nil && f.Next() {
		r := f.Batch()
		switch {
		case r.err != nil:
			err = r.err
		case sink != nil:
			err = sink.pushAt(ctx, r.rec, r.key)
		case agg != nil:
			err = agg.fold(r.partial)
			r.partial = nil // the aggregator's now
		default:
			err = next.push(ctx, r.rec)
		}
		r.Release()
	}
	f.Close()
	if err == nil {
		err = f.Err()
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && agg != nil {
		err = agg.emit(ctx, next)
	}
	if err == nil {
		if sink != nil {
			err = sink.finish(ctx)
		} else {
			err = next.finish(ctx)
		}
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, errEnough) {
		return context.Cause(ctx)
	}
	return err
}

func work(ctx context.Context, rec arrow.RecordBatch, mappers []mapper, agg aggregator) result {
	// A filter right before the aggregation only marks the rows to keep.
	if f, ok := lastFilter(mappers); ok && agg != nil {
		cur, err := mapAll(ctx, rec, mappers[:len(mappers)-1])
		if err != nil || cur == nil {
			return result{err: err}
		}
		sc := f.scratch.Get()
		defer f.scratch.Put(sc)
		keep, all, err := f.mask(cur, sc)
		if err != nil {
			cur.Release()
			return result{err: err}
		}
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
	cur, err := mapAll(ctx, rec, mappers)
	if err != nil || cur == nil {
		return result{err: err}
	}
	if agg == nil {
		return result{rec: cur}
	}
	p, err := agg.partial(ctx, cur, nil)
	cur.Release()
	return result{partial: p, err: err}
}

// mapAll runs rec through mappers, releasing rec and every batch between
// them; nil with no error is a batch a mapper dropped.
func mapAll(ctx context.Context, rec arrow.RecordBatch, mappers []mapper) (arrow.RecordBatch, error) {
	cur := rec
	for _, m := range mappers {
		out, err := m.mapBatch(ctx, cur)
		cur.Release()
		if err != nil || out == nil {
			return nil, err
		}
		cur = out
	}
	return cur, nil
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

func (r result) release(agg aggregator) {
	if r.rec != nil {
		r.rec.Release()
	}
	if r.partial != nil && agg != nil {
		agg.discard(r.partial)
	}
}
