package exec

import (
	"context"
	"io"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluice-data/sluice/internal/arrowsize"
)

// A join that ignores the right rows no left row matches (inner, left,
// semi, anti) and whose right side aggregates by the join's keys would
// fold groups that join nothing: TPC-H Q20 sums a year of lineitem by
// part and supplier, some 800 thousand groups, for the 8 thousand
// partsupp rows of its 'forest' parts; Q2 takes the least cost of 160
// thousand parts for a few hundred. Such a join runs its left side first
// and holds what comes out while it is small (reduceHold). If the left
// side ends there, its keys become a semi join put into the right side
// before the aggregation (as early as the key columns are there as they
// are), so that only rows of those keys are read on and folded, and the
// scan before may skip row groups by them; then the join runs over the
// held rows. The result is the same: a group whose keys no left row has
// joins no row. A left side that outgrows the hold goes on as a stream
// behind the rows held, and the right side is read whole, as without
// this.

// reduceHold is the most of its left side's output, in bytes, that a
// reducing join holds before it gives up on reducing (a variable for
// the tests of the other way). Keys that save folding groups are worth
// holding up to an eighth of the run's memory. Those that only leave a
// right side's rows out of the join's table are worth a few MiB before
// the side is read, whatever its size (Q18's 57 orders cut its orders
// side of 1.5 million rows as its scan reads it); past that, only when
// the side turns out large (cutSide): TPC-H Q5 and Q16 held some 15-30
// MiB of left rows to cut sides of 10 and 30 thousand rows, a third
// slower.
var reduceHold = func(e *env, folds bool) int64 {
	if folds {
		return e.memory / 8
	}
	return min(4<<20, e.memory/64)
}

// reducibleJoin finds the first join among stages that can take its left
// side's keys into its right side, and where in the right side's stages
// the keys' semi join goes; -1 when none can. The join at pruneAt reads
// its right side first to prune the scan before it instead (see
// cutPrunedSide). folds says the semi join goes before an aggregation.
func reducibleJoin(stages []Stage, pruneAt int) (at, insert int, folds bool) {
	for i, st := range stages {
		js, ok := st.(*joinStage)
		if !ok || i == pruneAt || js.pre != nil || js.reduced || js.preserves(false) {
			continue
		}
		k, folds := keyFilterAt(js.other.Stages, js.o.Right)
		return i, k, folds
	}
	return -1, -1, false
}

// keyFilterAt is where among stages a filter of rows by the columns keys
// can go without changing which of the rows they output have those keys,
// or their values: as early as every stage after it keeps each row (its
// keys as they are) or, for an aggregation grouped by (at least) keys,
// each group; at the end, after all of them, at the latest.
func keyFilterAt(stages []Stage, keys []string) (at int, folds bool) {
	at = len(stages)
	for at > 0 && keepsRows(stages[at-1], keys) {
		at--
	}
	if at > 0 {
		if a, ok := stages[at-1].(*aggStage); ok && !a.whole && subset(keys, a.keys) {
			at--
			for at > 0 && keepsColumns(stages[at-1], keys) {
				at--
			}
			return at, true
		}
	}
	return at, false
}

func subset(a, b []string) bool {
	for _, n := range a {
		if !slices.Contains(b, n) {
			return false
		}
	}
	return len(a) > 0
}

// keepsRows says st decides each row alone (or only reorders rows) and
// passes the columns keys on as they are.
func keepsRows(st Stage, keys []string) bool {
	switch s := st.(type) {
	case *filterStage, *sortStage:
		return true
	case *computeStage:
		for _, c := range s.cols {
			if slices.Contains(keys, c.Name) && !(!s.extend && (c.Expr == "" || c.Expr == c.Name)) {
				return false
			}
		}
		if s.extend {
			return true
		}
		for _, k := range keys {
			if !slices.ContainsFunc(s.cols, func(c Computed) bool { return c.Name == k }) {
				return false
			}
		}
		return true
	}
	return keepsColumns(st, keys)
}

// keepsColumns says st passes the columns keys on unchanged, each row's
// values as they were, dropping rows or not.
func keepsColumns(st Stage, keys []string) bool {
	switch s := st.(type) {
	case *filterStage, *sortStage:
		return true
	case *projectStage:
		if s.drop {
			return !slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(s.cols, k) })
		}
		return subset(keys, s.cols)
	case *renameStage:
		for _, p := range s.pairs {
			if slices.Contains(keys, p[0]) || slices.Contains(keys, p[1]) {
				return false
			}
		}
		return true
	case *joinStage:
		return s.semi() // a semi or anti join passes its left rows as they are
	}
	return false
}

// runReducing runs the join at stages[at] with its left side first
// (see above); its right side's keys filter goes before its stage
// insert.
func runReducing(ctx context.Context, p Pipeline, at, insert int, folds bool, opts Options, e *env) error {
	js := p.Stages[at].(*joinStage)
	rest := slices.Clone(p.Stages[at:])
	// The left side's output is held: only what the rest reads of it,
	// which the join can say once it knows its right side's columns.
	if _, known := outputNames(js.other.Stages); !known {
		right, err := js.otherSchema(e)
		if err != nil {
			return err
		}
		c := *js
		c.pre = &sideBatches{out: right}
		rest[0] = &c
	}
	need := usedColumns(rest)
	rest[0] = js
	prefix := Pipeline{Source: p.Source, Stages: slices.Clone(p.Stages[:at])}
	left := startLeft(ctx, prefix, need, opts)
	defer left.stop()
	schema, err := left.schema()
	if err != nil {
		return err
	}
	schema = neededSchema(schema, need)
	ended, err := left.hold(reduceHold(e, folds))
	if err != nil {
		return err
	}
	c := *js
	c.reduced = true
	if ended {
		filter, release, err := keysFilter(left.held, schema, js.o)
		if err != nil {
			return err
		}
		defer release()
		c.other = Pipeline{Source: js.other.Source, Stages: slices.Insert(slices.Clone(js.other.Stages), insert, filter)}
	}
	rest[0] = &c
	return Run(ctx, Pipeline{Source: &leftStage{l: left, schema: schema}, Stages: rest}, opts)
}

// keysFilter is a semi join that keeps the right side's rows of a join
// with options o whose keys some row of held (of schema) has; release
// releases the keys it holds, once it has run.
func keysFilter(held []arrow.RecordBatch, schema *arrow.Schema, o JoinOptions) (filter Stage, release func(), err error) {
	keys, err := keyBatches(held, o.Left)
	if err != nil {
		return nil, nil, err
	}
	ks, err := keySchema(schema, o.Left)
	if err != nil {
		releaseAll(keys)
		return nil, nil, err
	}
	return &joinStage{
		other: Pipeline{Source: FromBatches(ks, keys...)},
		o:     JoinOptions{How: "semi", Left: slices.Clone(o.Right), Right: slices.Clone(o.Left)},
		// Its side is these keys, already read.
		reduced: true,
	}, func() { releaseAll(keys) }, nil
}

// keySchema is the schema of the columns keys of s.
func keySchema(s *arrow.Schema, keys []string) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(keys))
	for i, k := range keys {
		idx := s.FieldIndices(k)
		if len(idx) != 1 {
			return nil, invalidf("join --on: the left side has no column %q", k)
		}
		fields[i] = s.Field(idx[0])
	}
	return arrow.NewSchema(fields, nil), nil
}

// keyBatches are the key columns of batches, which they share.
func keyBatches(batches []arrow.RecordBatch, keys []string) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	for _, b := range batches {
		ks, err := keySchema(b.Schema(), keys)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		cols := make([]arrow.Array, len(keys))
		for i, k := range keys {
			cols[i] = b.Column(b.Schema().FieldIndices(k)[0])
		}
		out = append(out, array.NewRecordBatch(ks, cols, b.NumRows()))
	}
	return out, nil
}

// leftRun is a reducing join's left side, running in its own goroutine:
// its batches come over ch in stream order, and those taken before the
// right side is read are held.
type leftRun struct {
	ch       chan arrow.RecordBatch
	schemaCh chan *arrow.Schema
	cancel   context.CancelFunc
	err      error // the run's, once ch is closed
	held     []arrow.RecordBatch
	// res counts held in the run's budget, pinned: held rows cannot
	// spill, and the side read after them takes what they leave.
	res      *reservation
	ended    bool // hold saw the run end
	stopOnce sync.Once
}

func startLeft(ctx context.Context, p Pipeline, need []string, opts Options) *leftRun {
	ctx, cancel := context.WithCancel(ctx)
	l := &leftRun{ch: make(chan arrow.RecordBatch), schemaCh: make(chan *arrow.Schema, 1), cancel: cancel}
	if b := budgetOf(ctx); b != nil {
		l.res = b.reserve(0)
		l.res.pin()
	}
	sink := &collectStage{reads: need, schema: func(s *arrow.Schema) {
		select {
		case l.schemaCh <- s:
		default:
		}
	}, fn: func(rec arrow.RecordBatch) error {
		if rec.NumRows() == 0 {
			return nil
		}
		rec = keepNeeded(rec, need)
		select {
		case l.ch <- rec:
			return nil
		case <-ctx.Done():
			rec.Release()
			return ctx.Err()
		}
	}}
	p.Stages = append(p.Stages, sink)
	go func() {
		defer close(l.ch)
		l.err = Run(ctx, p, opts)
	}()
	return l
}

// neededSchema is s with only the fields named in need (all when need
// is nil), as keepNeeded leaves a batch of it.
func neededSchema(s *arrow.Schema, need []string) *arrow.Schema {
	if need == nil {
		return s
	}
	var fields []arrow.Field
	for _, f := range s.Fields() {
		if slices.Contains(need, f.Name) {
			fields = append(fields, f)
		}
	}
	if len(fields) == len(s.Fields()) {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// keepNeeded returns rec's columns named in need (all when need is nil),
// retained.
func keepNeeded(rec arrow.RecordBatch, need []string) arrow.RecordBatch {
	if need == nil {
		rec.Retain()
		return rec
	}
	s := neededSchema(rec.Schema(), need)
	if s == rec.Schema() {
		rec.Retain()
		return rec
	}
	var cols []arrow.Array
	for i, f := range rec.Schema().Fields() {
		if slices.Contains(need, f.Name) {
			cols = append(cols, rec.Column(i))
		}
	}
	return array.NewRecordBatch(s, cols, rec.NumRows())
}

// schema waits for the left side's schema, as the held batches have it.
func (l *leftRun) schema() (*arrow.Schema, error) {
	select {
	case s := <-l.schemaCh:
		return s, nil
	case rec, ok := <-l.ch:
		if ok { // a batch comes after the schema is bound
			l.take(rec)
			return <-l.schemaCh, nil
		}
		// An empty left side sends its schema and ends: both are ready,
		// and select picks either.
		select {
		case s := <-l.schemaCh:
			if l.err == nil {
				return s, nil
			}
		default:
		}
		if l.err == nil {
			l.err = io.ErrUnexpectedEOF
		}
		return nil, l.err
	}
}

// hold takes batches until the left side ends (true) or what is held
// costs more than limit bytes (false).
func (l *leftRun) hold(limit int64) (bool, error) {
	var n int64
	for _, b := range l.held {
		n += arrowsize.Record(b)
	}
	for n <= limit {
		rec, ok := <-l.ch
		if !ok {
			l.ended = true
			return true, l.err
		}
		l.take(rec)
		n += arrowsize.Record(rec)
	}
	return false, nil
}

// take holds rec, counted in the budget.
func (l *leftRun) take(rec arrow.RecordBatch) {
	l.held = append(l.held, rec)
	if l.res != nil {
		l.res.force(arrowsize.Record(rec))
	}
}

// next hands on the first held batch, no longer counted.
func (l *leftRun) next() arrow.RecordBatch {
	rec := l.held[0]
	l.held = l.held[1:]
	if l.res != nil {
		l.res.shrink(arrowsize.Record(rec))
	}
	return rec
}

// stop ends the left side's run, if it is still going, and releases
// what was not taken.
func (l *leftRun) stop() {
	l.stopOnce.Do(func() {
		l.cancel()
		for rec := range l.ch {
			rec.Release()
		}
		releaseAll(l.held)
		l.held = nil
		l.res.free()
	})
}

// leftStage is the source of the rest of a reducing join's pipeline: the
// held batches, then the rest of the left side as it comes.
type leftStage struct {
	l      *leftRun
	schema *arrow.Schema
	opened bool
}

func (s *leftStage) Name() string { return "join (left side)" }

func (s *leftStage) open(ctx context.Context, e *env) (Source, error) {
	if s.opened {
		return nil, invalidf("join (left side): read twice")
	}
	s.opened = true
	return &leftSource{l: s.l, schema: s.schema}, nil
}

type leftSource struct {
	l      *leftRun
	schema *arrow.Schema
}

func (s *leftSource) Schema() *arrow.Schema { return s.schema }

func (s *leftSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if len(s.l.held) > 0 {
		return s.l.next(), nil
	}
	select {
	case rec, ok := <-s.l.ch:
		if !ok {
			if s.l.err != nil {
				return nil, s.l.err
			}
			return nil, io.EOF
		}
		return rec, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *leftSource) Close() error {
	s.l.stop()
	return nil
}

// A join reads its right side first (but for a reducing join's left
// side within its hold, above), and a join right after a scan prunes the
// scan by the side's keys. When the side is large and the left side
// turns out small (TPC-H Q4: the 57 thousand orders of a quarter against
// 3.8 million late lineitems; Q12: 30 thousand lineitems against 1.5
// million orders; Q9: 320 thousand lineitems of green parts against all
// of partsupp), the join's table would index right rows that no left
// row asks for, and its probes would miss the caches more. So, a side
// past cutSideMin read, the left side (the pruned scan and the stages up
// to the join, or the rest of a reducing join's left side) runs on into
// cutHold; if it ends there, the side is cut to the rows of its keys
// before the join indexes it. Either way the left side's rows go on from
// where they were held: nothing is read twice.

// cutSideMin is the least a join's side read whole holds (arrowsize's
// bytes) for its left side to be held for cutting it; cutHold is the
// most of the left side held. Variables for the tests.
var (
	cutSideMin int64 = 8 << 20
	cutHold          = func(e *env) int64 { return e.memory / 64 }
)

// cuttable says the join at stages[at] has its side read whole, of at
// least cutSideMin, and drops the right rows without a match.
func cuttable(stages []Stage, at int) (*joinStage, bool) {
	if at < 0 || at >= len(stages) {
		return nil, false
	}
	js, ok := stages[at].(*joinStage)
	if !ok || js.pre == nil || js.preserves(false) {
		return nil, false
	}
	if js.pre.spill != nil {
		// Spilled in parts, it is past any size worth cutting (cutSpilled).
		return js, !js.pre.flat
	}
	if len(js.pre.batches) == 0 {
		return nil, false
	}
	var size int64
	for _, b := range js.pre.batches {
		size += arrowsize.Record(b)
	}
	return js, size >= cutSideMin
}

// cutPrunedSide runs the left side of the join at p.Stages[at], right
// after the scan p.Source, into cutHold when the join is cuttable, and
// cuts its side if the left side ends there. It returns the left side's
// run and schema, for the rest of the pipeline to read; nil when the
// join is not cuttable, and the pipeline runs as it is.
func cutPrunedSide(ctx context.Context, e *env, p Pipeline, at int, opts Options) (*leftRun, *arrow.Schema, error) {
	js, ok := cuttable(p.Stages, at)
	if !ok {
		return nil, nil, nil
	}
	need := usedColumns(p.Stages[at:])
	left := startLeft(ctx, Pipeline{Source: p.Source, Stages: slices.Clone(p.Stages[:at])}, need, opts)
	schema, err := left.schema()
	if err != nil {
		left.stop()
		return nil, nil, err
	}
	schema = neededSchema(schema, need)
	if err := left.cut(ctx, e, js, schema); err != nil {
		left.stop()
		return nil, nil, err
	}
	return left, schema, nil
}

// cut holds the left side on into cutHold, and if it ends there cuts the
// side of js by its keys. A left side that ended before (its keys in the
// side already) is left as it is.
func (l *leftRun) cut(ctx context.Context, e *env, js *joinStage, schema *arrow.Schema) error {
	if l.ended {
		return nil
	}
	ended, err := l.hold(cutHold(e))
	if err != nil || !ended {
		return err
	}
	return cutSide(ctx, e, js.pre, js.o, l.held, schema)
}

// sideCut, when set (by tests), hears of each side cutSide cuts: its
// rows before and after.
var sideCut func(before, after int64)

// cutSide keeps of side's batches the rows whose keys (o.Right) some row
// of held (of schema, keys o.Left) has, in their order.
func cutSide(ctx context.Context, e *env, side *sideBatches, o JoinOptions, held []arrow.RecordBatch, schema *arrow.Schema) error {
	if side.spill != nil {
		return cutSpilled(ctx, e, side, o, held, schema)
	}
	filter, release, err := keysFilter(held, schema, o)
	if err != nil {
		return err
	}
	defer release()
	var kept []arrow.RecordBatch
	err = Run(ctx, Pipeline{Source: FromBatches(side.batches[0].Schema(), side.batches...), Stages: []Stage{filter, Collect(nil, func(rec arrow.RecordBatch) error {
		rec.Retain()
		kept = append(kept, rec)
		return nil
	})}}, Options{Mem: e.mem, Workers: e.workers, Memory: e.memory, TempDir: e.tempDir, Open: e.open})
	if err != nil {
		releaseAll(kept)
		return err
	}
	if sideCut != nil {
		var before, after int64
		for _, b := range side.batches {
			before += b.NumRows()
		}
		for _, b := range kept {
			after += b.NumRows()
		}
		sideCut(before, after)
	}
	if side.res != nil && side.keys != nil {
		var cost int64
		for _, b := range kept {
			cost += sideCost(b, side.keys)
		}
		side.res.shrink(side.res.held - cost)
	}
	releaseAll(side.batches)
	side.batches = kept
	return nil
}
