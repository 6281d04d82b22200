package exec

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowsize"
	"github.com/sluice-data/sluice/internal/size"
	"github.com/sluice-data/sluice/internal/spillfile"
)

// A join whose right side outgrows its memory is a grace hash join: both
// sides are split by the hash of their keys into joinParts parts on disk,
// and each part of the right side is joined in memory with the same part
// of the left. Each row carries its place in its side (lposColumn,
// rposColumn), and a sort by them puts the output in the order of a join
// in memory before they are dropped.
const (
	joinParts  = 64
	lposColumn = "_sluice_lpos_"
	rposColumn = "_sluice_rpos_"
)

// sideBatches are a join's right side, read whole, dictionaries decoded:
// in memory (batches), or, past its budget, in parts on disk, each row
// with its place (rposColumn). A semi or anti join's side is spilled
// flat, its batches as they came, and put in parts (toParts) only if the
// join does not index its left side instead (joinflip.go).
type sideBatches struct {
	// out is the schema of the side's pipeline.
	out     *arrow.Schema
	batches []arrow.RecordBatch
	spill   *spillFile
	parts   [][]spillSpan
	schema  *arrow.Schema // with rposColumn, once spilled
	rows    int64
	// res is what the batches held cost (sideCost), pinned once the side
	// is read whole.
	res  *reservation
	keys *keyEncoder
	kr   keyRows
	// flat says the spill holds the batches as they came (spans, of
	// schema flatSchema), not yet in parts.
	flat       bool
	spans      []spillSpan
	flatSchema *arrow.Schema
}

// spillSpan is one batch in a spill file.
type spillSpan struct{ off, n int64 }

func (s *sideBatches) release() {
	releaseAll(s.batches)
	s.batches = nil
	s.res.free()
	if s.spill != nil {
		s.spill.close()
		s.spill = nil
	}
}

// joinBudget is the most bytes of its right side, counted by sideCost,
// that a join holds, whether it reads the side whole or joins one part of
// a side that spilled: join --memory, else half the run's memory (and,
// reading the side whole, no more than the run's budget has room for:
// see sideShare).
func joinBudget(e *env, o JoinOptions) int64 {
	if o.Memory > 0 {
		return o.Memory
	}
	return e.memory / 2
}

// tableRowBytes is what a join's table holds for each right row besides
// its batches, at most: its rowRef (8 bytes), its link in next (4), and
// its slots in a table of one or two integers at least a quarter full
// (16 or 24 bytes each: up to 43 or 64), or, for other keys, its map
// entry (about as much, but for the key's bytes, which sideCost adds).
// A semi or anti join without --where holds only its keys.
const tableRowBytes = 64

// sideCost is what holding rec in a join's table costs: its buffers,
// the table's share for each row, and a copy of keys that are not one
// integer (the map's keys).
func sideCost(rec arrow.RecordBatch, keys *keyEncoder) int64 {
	n := arrowsize.Record(rec) + rec.NumRows()*tableRowBytes
	if len(keys.cols) == 1 && smallInt(keys.cols[0].in) {
		return n
	}
	for _, c := range keys.cols {
		n += arrowsize.Data(rec.Column(c.idx).Data())
	}
	return n
}

// readSide runs the right side's pipeline and keeps its batches: in
// memory while res has room for what they cost (sideCost; nil: no
// bound), in parts on disk past it. A side read whole keeps res, pinned.
func readSide(ctx context.Context, e *env, other Pipeline, o JoinOptions, res *reservation) (*sideBatches, error) {
	side := &sideBatches{res: res}
	var keysErr error // names the side already: returned as it is
	collect := Collect(func(s *arrow.Schema) { side.out = s }, func(rec arrow.RecordBatch) error {
		if rec.NumRows() == 0 {
			return nil
		}
		dec, err := decodeDicts(ctx, e, rec, decodedSchema(rec.Schema()))
		if err != nil {
			return err
		}
		if side.spill != nil {
			defer dec.Release()
			return side.spillBatch(ctx, e, dec)
		}
		side.batches = append(side.batches, dec)
		if res == nil {
			return nil
		}
		if side.keys == nil {
			if side.keys, keysErr = newKeyEncoder("join (right side)", dec.Schema(), o.Right); keysErr != nil {
				return keysErr
			}
		}
		if res.grow(sideCost(dec, side.keys)) {
			return nil
		}
		res.free()
		if side.spill, err = newSpillFile(e.tempDir, e.mem, "join", "join: spilling"); err != nil {
			return err
		}
		if o.How == "semi" || o.How == "anti" {
			side.flat = true
			side.flatSchema = dec.Schema()
			side.schema = positionsSchema(dec.Schema(), rposColumn)
		} else {
			side.parts = make([][]spillSpan, joinParts)
		}
		held := side.batches
		side.batches = nil
		defer releaseAll(held)
		for _, b := range held {
			if err := side.spillBatch(ctx, e, b); err != nil {
				return err
			}
		}
		return nil
	})
	p := Pipeline{Source: other.Source, Stages: append(slices.Clone(other.Stages), collect)}
	if err := Run(ctx, p, Options{Mem: e.mem, Workers: e.workers, Memory: e.memory, TempDir: e.tempDir, Open: e.open}); err != nil {
		side.release()
		if keysErr != nil {
			return nil, keysErr
		}
		return nil, fmt.Errorf("join (right side): %w", err)
	}
	if side.spill != nil {
		side.spill.doneWriting()
	} else if res != nil {
		res.pin()
	}
	return side, nil
}

// spillBatch writes rec's rows, each with its place in the side, to the
// parts their keys hash to.
func (s *sideBatches) spillBatch(ctx context.Context, e *env, rec arrow.RecordBatch) error {
	if s.flat {
		off, n, err := s.spill.write(rec)
		if err != nil {
			return err
		}
		s.spans = append(s.spans, spillSpan{off, n})
		return nil
	}
	ext := WithPositions(e.mem, rec, rposColumn, s.rows)
	defer ext.Release()
	s.rows += rec.NumRows()
	if s.schema == nil {
		s.schema = ext.Schema()
	}
	return spillParts(ctx, e, s.spill, s.parts, s.keys, &s.kr, ext)
}

// toParts puts a side spilled flat in parts, each row with its place,
// in a spill file of their own.
func (s *sideBatches) toParts(ctx context.Context, e *env) error {
	if !s.flat {
		return nil
	}
	f, err := newSpillFile(e.tempDir, e.mem, "join", "join: spilling")
	if err != nil {
		return err
	}
	flat, spans := s.spill, s.spans
	defer flat.close()
	s.spill, s.parts, s.flat, s.spans = f, make([][]spillSpan, joinParts), false, nil
	for _, sp := range spans {
		rec, err := flat.read(sp.off, sp.n, s.flatSchema)
		if err != nil {
			return err
		}
		err = s.spillBatch(ctx, e, rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	f.doneWriting()
	return nil
}

// WithPositions is rec with an int64 column name appended holding from,
// from+1, ...: each row's place, by which a later merge restores an order
// (a grace join's, a fan-out's shuffle and sort).
func WithPositions(mem memory.Allocator, rec arrow.RecordBatch, name string, from int64) arrow.RecordBatch {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	n := int(rec.NumRows())
	b.Reserve(n)
	for i := range n {
		b.UnsafeAppend(from + int64(i))
	}
	pos := b.NewArray()
	defer pos.Release()
	return array.NewRecordBatch(positionsSchema(rec.Schema(), name), append(slices.Clone(rec.Columns()), pos), int64(n))
}

// positionsSchema is s with WithPositions' column name.
func positionsSchema(s *arrow.Schema, name string) *arrow.Schema {
	fields := append(slices.Clone(s.Fields()), arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64})
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// spillParts writes each row of rec to the part its key hashes to (a
// null key, which matches nothing, to part 0).
func spillParts(ctx context.Context, e *env, f *spillFile, parts [][]spillSpan, keys *keyEncoder, kr *keyRows, rec arrow.RecordBatch) error {
	keys.encode(rec, kr)
	nulls := keyNulls(rec, keys)
	rows := make([][]rowRef, len(parts))
	for i := range int(rec.NumRows()) {
		p := 0
		if nulls == nil || !nulls[i] {
			p = PartitionOf(kr.row(i), len(parts))
		}
		rows[p] = append(rows[p], rowRef{Row: int32(i)})
	}
	srcs := []arrow.RecordBatch{rec}
	for p, rs := range rows {
		if len(rs) == 0 {
			continue
		}
		// gather, not compute's take: a fifth of a spilled join's time
		// went to take's kernels and their allocations.
		part, err := gatherRows(ctx, e.mem, rec.Schema(), srcs, rs)
		if err != nil {
			return err
		}
		off, n, err := f.write(part)
		part.Release()
		if err != nil {
			return err
		}
		parts[p] = append(parts[p], spillSpan{off, n})
	}
	return nil
}

// graceOp is a join whose right side is in parts on disk: it puts the
// left rows in the same parts, then joins part by part into a run file
// each. A part's output is in the order of its rows' places (left rows
// in order, each with its matches in right order, then the right rows
// without a match), so merging the runs by those places gives the order
// of a join in memory, holding one batch of each run.
type graceOp struct {
	s      *joinStage
	e      *env
	g      *joiner // over both sides with their places
	left   *spillFile
	lparts [][]spillSpan
	lkeys  *keyEncoder
	kr     keyRows
	lpos   int64
	budget int64         // what a part of the right side may cost (sideCost)
	res    *reservation  // what the part joined now costs
	out    *arrow.Schema // joined rows with their places
	ob     *orderBy      // by the places
	runs   []*os.File    // each part's joined rows, read back from the start
	bw     *bufio.Writer // writes a run, one part's after another's
	// drop drops the places and hands the rows on.
	drop operator
	// flip, for a semi or anti join, holds the left side while it costs
	// (sideCost) up to budget, to join it with the right side's parts
	// as they are if it ends there (joinflip.go).
	flip *flipJoin
}

func newGraceOp(s *joinStage, e *env, in *arrow.Schema, next operator) (operator, error) {
	side := s.pre
	md := in.Metadata()
	inExt := arrow.NewSchema(append(slices.Clone(in.Fields()), arrow.Field{Name: lposColumn, Type: arrow.PrimitiveTypes.Int64, Nullable: true}), &md)
	g, err := newJoiner(s, e, inExt, side.schema)
	if err != nil {
		return nil, err
	}
	out := g.joined
	keys := []SortKey{{Column: lposColumn}}
	drop := []string{lposColumn}
	if s.semi() {
		out = inExt
	} else {
		// Right rows without a match have no left place: a null, which
		// sorts last, and then by their place on the right.
		rpos := out.Field(out.NumFields() - 1).Name
		keys = append(keys, SortKey{Column: rpos})
		drop = append(drop, rpos)
	}
	dropped, err := Drop(drop...).bind(e, out)
	if err != nil {
		return nil, err
	}
	ob, err := newOrderBy("join", out, keys)
	if err != nil {
		return nil, err
	}
	lkeys, err := newKeyEncoder("join (left side)", inExt, s.o.Left)
	if err != nil {
		return nil, err
	}
	o := &graceOp{s: s, e: e, g: g, lparts: make([][]spillSpan, joinParts), lkeys: lkeys,
		budget: joinBudget(e, s.o), res: e.budget.reserve(0), out: out, ob: ob, drop: &mapOp{m: dropped.mapper, next: next}}
	if s.semi() {
		if o.flip, err = newFlipJoin(s, e, in, next); err != nil {
			o.release()
			return nil, err
		}
	}
	return o, nil
}

func (o *graceOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if o.flip != nil {
		if o.flip.hold(rec, o.lkeys) {
			return nil
		}
		// Past the budget: both sides are split into parts, the left
		// side as it would have been from its first batch.
		if err := o.s.pre.toParts(ctx, o.e); err != nil {
			return err
		}
		held := o.flip.held
		o.flip.held = nil
		o.flip.release()
		o.flip = nil
		defer releaseAll(held)
		for _, b := range held {
			if err := o.spillLeft(ctx, b); err != nil {
				return err
			}
		}
	}
	return o.spillLeft(ctx, rec)
}

// spillLeft writes rec's rows, each with its place in the left side, to
// the parts their keys hash to.
func (o *graceOp) spillLeft(ctx context.Context, rec arrow.RecordBatch) error {
	ext := WithPositions(o.e.mem, rec, lposColumn, o.lpos)
	defer ext.Release()
	o.lpos += rec.NumRows()
	if o.left == nil {
		// Made at the first row to spill: a flipped join writes none.
		var err error
		if o.left, err = newSpillFile(o.e.tempDir, o.e.mem, "join", "join: spilling"); err != nil {
			return err
		}
	}
	return spillParts(ctx, o.e, o.left, o.lparts, o.lkeys, &o.kr, ext)
}

func (o *graceOp) finish(ctx context.Context) error {
	if o.flip != nil {
		if err := o.flip.join(ctx, o.s.pre, o.lkeys, o.g.intKey); err != nil {
			return err
		}
		return o.drop.finish(ctx)
	}
	if err := o.s.pre.toParts(ctx, o.e); err != nil {
		return err
	}
	if o.left != nil {
		o.left.doneWriting()
	}
	for p := range joinParts {
		if err := o.joinPart(ctx, p); err != nil {
			return err
		}
	}
	o.bw = nil
	var inputs []*runReader
	defer func() {
		for _, r := range inputs {
			r.close()
		}
	}()
	for i, run := range o.runs {
		src, err := openRun(run, o.e.mem)
		if err != nil {
			return fmt.Errorf("join: reading a spilled part: %w", err)
		}
		inputs = append(inputs, &runReader{idx: i, src: src, at: -1})
	}
	if err := mergeSorted(ctx, o.e.mem, o.out, o.ob, inputs, o.drop); err != nil {
		return err
	}
	return o.drop.finish(ctx)
}

// joinPart joins part p of both sides into a run file.
func (o *graceOp) joinPart(ctx context.Context, p int) (err error) {
	side := o.s.pre
	if len(o.lparts[p]) == 0 && (len(side.parts[p]) == 0 || !o.s.preserves(false)) {
		return nil // nothing to send
	}
	var batches []arrow.RecordBatch
	var bytes int64
	defer o.res.free()
	for _, sp := range side.parts[p] {
		b, err := side.spill.read(sp.off, sp.n, side.schema)
		if err != nil {
			releaseAll(batches)
			return err
		}
		batches = append(batches, b)
		cost := sideCost(b, o.g.rkeys)
		bytes += cost
		// A part cannot be split further: within the join's bound it is
		// held whether the run's budget has room or not.
		if !o.res.grow(cost) {
			o.res.force(cost)
		}
		if bytes > o.budget {
			releaseAll(batches)
			return tooLarge{fmt.Errorf("join: one part of the right side holds more than the join may (%s, with its table): its keys are too few to split it (a hot key?); give the join more --memory", size.Format(o.budget))}
		}
	}
	t, err := o.g.buildTable(batches)
	if err != nil {
		return err
	}
	defer t.release()
	f, err := spillfile.Create(o.e.tempDir, "sluice-join-*.arrows")
	if err != nil {
		return fmt.Errorf("join: spilling: %w", err)
	}
	o.runs = append(o.runs, f)
	if o.bw == nil {
		o.bw = bufio.NewWriterSize(f, 1<<20)
	}
	bw := o.bw
	bw.Reset(f)
	w := ipc.NewWriter(bw, ipc.WithSchema(o.out), ipc.WithAllocator(o.e.mem))
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		if err != nil {
			err = fmt.Errorf("join: spilling: %w", err)
		}
	}()
	for _, sp := range o.lparts[p] {
		rec, err := o.left.read(sp.off, sp.n, o.g.in)
		if err != nil {
			return err
		}
		out, err := o.g.joinBatch(ctx, t, rec)
		rec.Release()
		if err != nil {
			return err
		}
		err = w.Write(out)
		out.Release()
		if err != nil {
			return err
		}
	}
	if t.matched != nil {
		return o.g.unmatchedRight(ctx, t, w.Write)
	}
	return nil
}

func (o *graceOp) release() {
	o.res.free()
	if o.flip != nil {
		o.flip.release()
		o.flip = nil
	}
	if o.left != nil {
		o.left.close()
		o.left = nil
	}
	for _, r := range o.runs {
		spillfile.Remove(r)
	}
	o.runs = nil
}
