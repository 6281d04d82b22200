package exec

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/internal/arrowsize"
	"github.com/sluice-data/sluice/plan"
)

// A plan may compute one thing in several places: TPC-H Q15 scans and
// aggregates lineitem for a join's other side and again, the same way,
// inside a let within that side. Such a part runs once in a run, and
// every place reads its result.
//
// What is shared: the first stages of sub-pipelines (a join's other side,
// a let's pipeline, at any depth) that end in an aggregation and are the
// same in two or more places, compared by their plan's JSON. An
// aggregation's output is whole before its first batch leaves, so
// holding it costs what the aggregation held anyway; and it reads the
// same columns whatever follows it, so one run fetches for every place
// what each would have fetched. Parts that stream (a scan and a filter)
// are left alone: holding them would cost memory a run does not spend
// today. Nor is a part with a stage of side effects shared: it runs as
// often as it is written. The pipeline Compile is given keeps its stages
// one for one with the plan's nodes (fan-out cuts it at their indices and
// reads its scan piece by piece); only what joins and lets read whole is
// rewritten.
//
// The result is held in memory while the run's budget has room for it,
// up to half of it (a join's default bound for its other side, which a
// join reading it shares), pinned once whole, and spills to the run's
// temp dir past that; each place reads it in the
// order the part gave it. It is kept until every place has read it to
// its end, or the outermost Run ends.

// sharing is what a plan's sub-pipelines share, by key (shareKey).
type sharing struct {
	entries map[string]*sharedEntry
}

// sharedEntry is one shared part.
type sharedEntry struct {
	plan *plan.Plan
	// uses is how many places read it in one run.
	uses int
	// pipe is the part compiled (its own first stages may be a shared
	// part too).
	pipe Pipeline
}

// shareKey is the key of stages as a shared part, and whether they may be
// one: they end in an aggregation and none has side effects.
func shareKey(stages []plan.Stage) (string, bool) {
	switch stages[len(stages)-1].(type) {
	case *plan.AggBy, *plan.Agg, *plan.SumBy, *plan.CountBy:
	default:
		return "", false
	}
	if slices.ContainsFunc(stages, plan.SideEffects) {
		return "", false
	}
	b, err := json.Marshal(&plan.Plan{Stages: stages})
	if err != nil {
		return "", false
	}
	return string(b), true
}

// newSharing finds the parts of p's sub-pipelines to share. It counts the
// places that would compile to each candidate, as Compile goes: a place
// takes the longest shared part that its first stages are, and a shared
// part is compiled once, whatever reads it. A candidate fewer than two
// places read is dropped and the count taken again, until none is.
func newSharing(p *plan.Plan) *sharing {
	count := map[string]int{}
	var walk func(stages []plan.Stage)
	walk = func(stages []plan.Stage) {
		for _, st := range stages {
			for _, sub := range plan.SubPlans(st) {
				for n := 1; n <= len(sub.Stages); n++ {
					if k, ok := shareKey(sub.Stages[:n]); ok {
						count[k]++
					}
				}
				walk(sub.Stages)
			}
		}
	}
	walk(p.Stages)
	s := &sharing{entries: map[string]*sharedEntry{}}
	for k, c := range count {
		if c >= 2 {
			s.entries[k] = &sharedEntry{}
		}
	}
	for len(s.entries) > 0 {
		for _, en := range s.entries {
			en.uses, en.plan = 0, nil
		}
		var place func(stages []plan.Stage, limit int)
		subs := func(stages []plan.Stage) {
			for _, st := range stages {
				for _, sub := range plan.SubPlans(st) {
					place(sub.Stages, len(sub.Stages))
				}
			}
		}
		place = func(stages []plan.Stage, limit int) {
			en, n := s.longest(stages, limit)
			if en != nil {
				en.uses++
				if en.plan == nil {
					en.plan = &plan.Plan{Stages: stages[:n]}
					place(stages[:n], n-1)
				}
			}
			subs(stages[n:])
		}
		subs(p.Stages)
		dropped := false
		for k, en := range s.entries {
			if en.uses < 2 {
				delete(s.entries, k)
				dropped = true
			}
		}
		if !dropped {
			break
		}
	}
	return s
}

// longest is the longest shared part that the first stages of a
// sub-pipeline (at most limit of them) are, and its number of stages.
func (s *sharing) longest(stages []plan.Stage, limit int) (*sharedEntry, int) {
	if s == nil || len(s.entries) == 0 {
		return nil, 0
	}
	for n := min(limit, len(stages)); n > 0; n-- {
		if k, ok := shareKey(stages[:n]); ok {
			if en := s.entries[k]; en != nil {
				return en, n
			}
		}
	}
	return nil, 0
}

// outSchema is the schema of the part's output, found as a join finds
// its other side's (the source opened for its schema, the stages bound),
// once in a run: the data may change between runs.
func (r *sharedRun) outSchema(e *env) (*arrow.Schema, error) {
	r.smu.Lock()
	defer r.smu.Unlock()
	if r.schema != nil {
		return r.schema, nil
	}
	en := r.entry
	src, err := en.pipe.Source.open(context.Background(), e)
	if err != nil {
		return nil, err
	}
	in := src.Schema()
	src.Close()
	var out *arrow.Schema
	sink := Collect(func(s *arrow.Schema) { out = s }, nil)
	if _, err := bindAll(e, in, append(slices.Clone(en.pipe.Stages), sink)); err != nil {
		return nil, err
	}
	r.schema = out
	return out, nil
}

// sharedSource is one place that reads a shared part, as its source.
type sharedSource struct{ entry *sharedEntry }

func (s *sharedSource) Name() string { return s.entry.pipe.Source.Name() }

// open finds the part's schema; the part runs when a reader first asks
// for a batch. Outside a Run (a join opening its other side for its
// schema) the reader has a result of its own.
func (s *sharedSource) open(ctx context.Context, e *env) (Source, error) {
	r := &sharedReader{e: e}
	if sc, ok := ctx.Value(shareScopeKey{}).(*shareScope); ok {
		r.run = sc.run(s.entry)
	} else {
		r.run = &sharedRun{entry: s.entry, uses: 1, private: true}
	}
	var err error
	if r.schema, err = r.run.outSchema(e); err != nil {
		return nil, err
	}
	return r, nil
}

// shareScope holds the shared parts' results of one run: the outermost
// Run makes it, the Runs within it (a join's other side, a let's
// pipeline) find it in their context, and it is released when the
// outermost Run ends.
type shareScope struct {
	mu   sync.Mutex
	runs map[*sharedEntry]*sharedRun
}

type shareScopeKey struct{}

// withShareScope returns ctx with a scope, and what releases it when ctx
// had none.
func withShareScope(ctx context.Context) (context.Context, func()) {
	if _, ok := ctx.Value(shareScopeKey{}).(*shareScope); ok {
		return ctx, func() {}
	}
	sc := &shareScope{runs: map[*sharedEntry]*sharedRun{}}
	return context.WithValue(ctx, shareScopeKey{}, sc), sc.release
}

func (sc *shareScope) run(en *sharedEntry) *sharedRun {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	r := sc.runs[en]
	if r == nil {
		r = &sharedRun{entry: en, uses: en.uses}
		sc.runs[en] = r
	}
	return r
}

func (sc *shareScope) release() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, r := range sc.runs {
		r.mu.Lock()
		r.reset()
		r.mu.Unlock()
	}
}

// sharedRun is a shared part's result in one run: made by the first
// reader, read by every one.
type sharedRun struct {
	entry *sharedEntry
	uses  int
	// private: one reader's alone, released when it closes.
	private bool

	smu    sync.Mutex
	schema *arrow.Schema // the output's, once found

	mu sync.Mutex
	// filling is closed when the reader making the result is done.
	filling chan struct{}
	ready   bool
	err     error // the part's error, which every reader gets
	res     *sharedResult
	// active readers hold the result; finished ones read it to its end.
	active, finished int
}

// sharedResult is a part's output: its batches in memory, or in a spill
// file (spans, in order).
type sharedResult struct {
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	res     *reservation // what batches cost
	spill   *spillFile
	spans   []spillSpan
}

func (r *sharedResult) release() {
	releaseAll(r.batches)
	r.batches = nil
	r.res.free()
	if r.spill != nil {
		r.spill.close()
		r.spill = nil
	}
}

// acquire returns the result, running the part first if no reader has;
// the caller calls done when it stops reading.
func (r *sharedRun) acquire(ctx context.Context, e *env) (*sharedResult, error) {
	r.mu.Lock()
	for !r.ready {
		if ch := r.filling; ch != nil {
			r.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			r.mu.Lock()
			continue
		}
		ch := make(chan struct{})
		r.filling = ch
		r.mu.Unlock()
		res, err := fillShared(ctx, e, r.entry)
		r.mu.Lock()
		r.filling = nil
		close(ch)
		if err != nil && ctx.Err() != nil {
			// This reader was cancelled, which says nothing of the
			// part: a reader still running makes it again.
			r.mu.Unlock()
			return nil, err
		}
		r.ready, r.res, r.err = true, res, err
	}
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	r.active++
	return r.res, nil
}

// done says a reader stopped reading (at the end, or not); once every
// place has read the result to its end and none reads it, it goes, and
// a place that reads again makes it again.
func (r *sharedRun) done(end bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active--
	if end {
		r.finished++
	}
	if r.active == 0 && (r.private || r.finished >= r.uses) {
		r.reset()
	}
}

// reset releases the result and forgets the run. Called with mu held.
func (r *sharedRun) reset() {
	if r.res != nil {
		r.res.release()
	}
	r.ready, r.res, r.err, r.finished = false, nil, nil, 0
}

// fillShared runs the part and keeps its batches: in memory while the
// run's budget has room for them, up to half of it, in a spill file past
// that.
func fillShared(ctx context.Context, e *env, en *sharedEntry) (*sharedResult, error) {
	res := &sharedResult{res: e.budget.reserve(e.budget.size / 2)}
	write := func(rec arrow.RecordBatch) error {
		off, n, err := res.spill.write(rec)
		res.spans = append(res.spans, spillSpan{off, n})
		return err
	}
	collect := Collect(func(s *arrow.Schema) { res.schema = s }, func(rec arrow.RecordBatch) error {
		if res.spill != nil {
			return write(rec)
		}
		rec.Retain()
		res.batches = append(res.batches, rec)
		if res.res.grow(arrowsize.Record(rec)) {
			return nil
		}
		res.res.free()
		var err error
		if res.spill, err = newSpillFile(e.tempDir, e.mem, "shared", "shared sub-pipeline"); err != nil {
			return err
		}
		held := res.batches
		res.batches = nil
		defer releaseAll(held)
		for _, b := range held {
			if err := write(b); err != nil {
				return err
			}
		}
		return nil
	})
	p := Pipeline{Source: en.pipe.Source, Stages: append(slices.Clone(en.pipe.Stages), collect)}
	if err := Run(ctx, p, Options{Mem: e.mem, Workers: e.workers, Memory: e.memory, TempDir: e.tempDir, Open: e.open}); err != nil {
		res.release()
		return nil, err
	}
	if res.spill != nil {
		res.spill.doneWriting()
	} else {
		res.res.pin()
	}
	return res, nil
}

// sharedReader is one place's read of a shared result, from its first
// batch.
type sharedReader struct {
	run    *sharedRun
	schema *arrow.Schema
	e      *env
	res    *sharedResult // while reading
	next   int
	end    bool
}

func (r *sharedReader) Schema() *arrow.Schema { return r.schema }

func (r *sharedReader) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if r.end {
		return nil, io.EOF
	}
	if r.res == nil {
		res, err := r.run.acquire(ctx, r.e)
		if err != nil {
			return nil, err
		}
		r.res = res
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := r.res
	switch {
	case res.spill != nil && r.next < len(res.spans):
		sp := res.spans[r.next]
		r.next++
		return res.spill.read(sp.off, sp.n, res.schema)
	case res.spill == nil && r.next < len(res.batches):
		b := res.batches[r.next]
		r.next++
		b.Retain()
		return b, nil
	}
	r.end, r.res = true, nil
	r.run.done(true)
	return nil, io.EOF
}

func (r *sharedReader) Close() error {
	if r.res != nil {
		r.res = nil
		r.run.done(false)
	}
	return nil
}
