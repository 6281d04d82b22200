package exec

import (
	"bufio"
	"context"
	"fmt"
	"hash/maphash"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/sluice-data/sluice/internal/spillfile"
)

// A hash aggregation past its budget spills, as a Grace hash join does:
// its groups' states go to partition files by a hash of their keys, and
// from then on each batch's summary follows them there instead of being
// folded. At the end each partition is folded alone (spilling again, with
// another hash, if it is still too big), its groups sorted into a run, and
// the runs merged back into key order.
//
// A partition file holds a group's state as folded up to the spill, then
// that group's summaries in stream order, so folding the file adds what
// the in-memory fold would have, in the same order: the result is the
// same to the bit.

const (
	// aggSpillParts is how many partitions a spill cuts the groups into:
	// each is folded alone at the end, so a table of up to this many
	// budgets' worth of groups is done in one more pass.
	aggSpillParts = 16
	// aggSpillDepth is how many times groups are cut again; past it (a
	// few groups with huge states, say median over a hot key) the fold
	// stays in memory.
	aggSpillDepth = 3
	// aggSpillRows is how many summary rows a partition gathers before
	// writing them as one batch.
	aggSpillRows = 4096

	// groupBytes is what the fold holds for a group besides its key
	// bytes and states: its entry in the index (a map slot, at most half
	// full after it grows), where groupKeys has its key and the spare
	// capacity doubling leaves. Measured, a group of an int64 key
	// holds 73-82 bytes besides its states.
	groupBytes = 96
	// accumBytes is what one aggregate's fixed state takes in a group:
	// its count and running value, twice for the capacity doubling
	// leaves (measured: 13-27 bytes).
	accumBytes = 32
)

type aggSpill struct {
	seed  maphash.Seed
	state *arrow.Schema // the summaries' schema: keys, then states and counts
	parts []*aggPart
}

// aggPart is one partition: its file, and the summaries gathered for it
// and not yet written.
type aggPart struct {
	f    *os.File
	bw   *bufio.Writer
	w    *ipc.Writer
	rows int64
	pend aggPartial
}

// stateLayout is the schema of a hash aggregation's summaries (its key
// columns, then each aggregate's state, but for count's, and count) and
// where each aggregate's state (-1 for count) and count are.
func stateLayout(keys []arrow.Field, aggs []boundAgg) (fields []arrow.Field, valIdx, nIdx []int) {
	fields = append([]arrow.Field(nil), keys...)
	for _, a := range aggs {
		v := -1
		if a.fn != aggCount {
			v = len(fields)
			fields = append(fields, stateField(a))
		}
		valIdx = append(valIdx, v)
		nIdx = append(nIdx, len(fields))
		fields = append(fields, arrow.Field{Name: stateCountName(a.name), Type: arrow.PrimitiveTypes.Int64})
	}
	return fields, valIdx, nIdx
}

// reserve counts what the fold holds now in its reservation, and spills
// the groups when the run's budget does not have room for them. A fold
// that may not spill (of no keys: one group; or past aggSpillDepth) holds
// them anyway.
func (h *hashAgg) reserve() error {
	more := h.bytes - h.res.held
	if h.res.grow(more) {
		return nil
	}
	if len(h.keys.cols) == 0 || h.depth >= aggSpillDepth {
		h.res.force(more)
		return nil
	}
	return h.spill()
}

// groupCost is what a new group of key k adds to the fold.
func (h *hashAgg) groupCost(k string) int64 {
	return int64(len(k)) + groupBytes + int64(len(h.aggs))*accumBytes
}

// heldBytes is what acc's group d holds beyond its state's fixed size:
// its values, its sketch or its string. A distinct set is not sized here,
// which would walk it: newDistinct counts what a merge adds to one.
func heldBytes(a boundAgg, acc *accum, d int32) int64 {
	switch a.fn {
	case aggQuantile:
		return 8 * int64(len(acc.vals[d]))
	case aggApproxQuantile:
		if sk := acc.dd[d]; sk != nil {
			return quantileSketchBytes(sk)
		}
	case aggApproxDistinct:
		if sk := acc.sk[d]; sk != nil {
			return int64(len(sk.sparse))*16 + int64(len(sk.reg))
		}
	case aggMin, aggMax, aggAnyValue:
		if a.k == kString {
			return int64(len(acc.s[d]))
		}
	}
	return 0
}

// newDistinct is what the values of src's set g that dst's set d lacks
// will take there.
func newDistinct(dst *accum, d int32, src *accum, g int) int64 {
	var n int64
	for k := range src.set[g] {
		if _, ok := dst.set[d][k]; !ok {
			n += int64(len(k)) + 32
		}
	}
	return n
}

// spill starts spilling: the folded groups go to their partitions, and
// the fold starts over empty.
func (h *hashAgg) spill() error {
	keyFields := h.out.Fields()[:len(h.keys.cols)]
	fields, _, _ := stateLayout(keyFields, h.aggs)
	s := &aggSpill{seed: maphash.MakeSeed(), state: arrow.NewSchema(fields, nil)}
	h.spilled = s
	for range aggSpillParts {
		f, err := spillfile.Create(h.tempDir, "sluice-agg-*.arrows")
		if err != nil {
			return fmt.Errorf("%s: spill: %w", h.stage, err)
		}
		bw := bufio.NewWriterSize(f, 64<<10)
		s.parts = append(s.parts, &aggPart{f: f, bw: bw, w: ipc.NewWriter(bw, ipc.WithSchema(s.state), ipc.WithAllocator(h.mem)),
			pend: aggPartial{acc: make([]accum, len(h.aggs))}})
	}
	// The held groups' keys are copied out of the arrays released below:
	// the partitions keep them.
	held, arrays := &aggPartial{keys: make([]string, h.groupKeys.len()), acc: h.acc}, h.arrays
	var arena keyArena
	for g := range held.keys {
		held.keys[g] = arena.str(h.groupKeys.bytes(g))
	}
	defer arrays.release()
	h.freshState()
	h.bytes = 0
	// From here on the fold holds only what its parts gather.
	h.res.free()
	return h.route(held)
}

// route sends each group of p to its partition.
func (h *hashAgg) route(p *aggPartial) error {
	s := h.spilled
	p.stringKeys()
	for g, k := range p.keys {
		part := s.parts[maphash.String(s.seed, k)%aggSpillParts]
		d := int32(len(part.pend.keys))
		part.pend.keys = append(part.pend.keys, k)
		for j, a := range h.aggs {
			acc := &part.pend.acc[j]
			acc.grow(a, len(part.pend.keys))
			// Into an empty state, a merge is a copy.
			if err := mergeAccum(a, acc, d, &p.acc[j], g); err != nil {
				return fmt.Errorf("%s: %s: %w", h.stage, a.name, err)
			}
		}
		if len(part.pend.keys) >= aggSpillRows {
			if err := h.writePart(part); err != nil {
				return err
			}
		}
	}
	return nil
}

// writePart writes what part gathered as one batch of summaries.
func (h *hashAgg) writePart(part *aggPart) error {
	if len(part.pend.keys) == 0 {
		return nil
	}
	rec, err := h.stateBatch(h.spilled.state, &part.pend)
	if err != nil {
		return err
	}
	err = part.w.Write(rec)
	rec.Release()
	if err != nil {
		return fmt.Errorf("%s: spill: %w", h.stage, err)
	}
	part.rows += int64(len(part.pend.keys))
	part.pend = aggPartial{keys: part.pend.keys[:0], acc: make([]accum, len(h.aggs))}
	return nil
}

// emitSpilled folds each partition alone, sorts its groups into a run,
// and merges the runs into next in key order.
func (h *hashAgg) emitSpilled(ctx context.Context, next operator) error {
	s := h.spilled
	for _, part := range s.parts {
		if err := h.writePart(part); err != nil {
			return err
		}
		if err := part.w.Close(); err != nil {
			return fmt.Errorf("%s: spill: %w", h.stage, err)
		}
		if err := part.bw.Flush(); err != nil {
			return fmt.Errorf("%s: spill: %w", h.stage, err)
		}
	}
	var inputs []*runReader
	defer func() {
		for _, r := range inputs {
			r.close()
		}
	}()
	var runs []*os.File
	defer func() {
		for _, f := range runs {
			spillfile.Remove(f)
		}
	}()
	for i, part := range s.parts {
		if part.rows == 0 {
			continue
		}
		run, err := h.foldPart(ctx, part)
		spillfile.Remove(part.f) // its disk is freed before the next is folded
		part.f = nil
		if err != nil {
			return err
		}
		runs = append(runs, run)
		src, err := openRun(run, h.mem)
		if err != nil {
			return fmt.Errorf("%s: reading a spilled run: %w", h.stage, err)
		}
		inputs = append(inputs, &runReader{idx: i, src: src, at: -1})
	}
	return mergeSorted(ctx, h.mem, h.out, h.keyOrder(), inputs, next)
}

// foldPart folds one partition's summaries, in the order they were
// written, and writes its groups in key order to a new run.
func (h *hashAgg) foldPart(ctx context.Context, part *aggPart) (run *os.File, err error) {
	s := h.spilled
	names := make([]string, len(h.keys.cols))
	for i, c := range h.keys.cols {
		names[i] = c.name
	}
	keys, err := newKeyEncoder(h.stage, s.state, names)
	if err != nil {
		return nil, err
	}
	_, valIdx, nIdx := stateLayout(nil, h.aggs)
	for i := range valIdx {
		if valIdx[i] >= 0 {
			valIdx[i] += len(names)
		}
		nIdx[i] += len(names)
	}
	sub := &stateAgg{hashAgg: newHashAgg(&env{mem: h.mem, budget: h.res.b, tempDir: h.tempDir}, keys, h.aggs, h.out, h.stage),
		valIdx: valIdx, nIdx: nIdx}
	sub.depth = h.depth + 1
	defer sub.release()
	src, err := openRun(part.f, h.mem)
	if err != nil {
		return nil, fmt.Errorf("%s: reading a spilled partition: %w", h.stage, err)
	}
	defer src.Close()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec, err := src.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading a spilled partition: %w", h.stage, err)
		}
		p, err := sub.partial(ctx, rec, nil)
		rec.Release()
		if err == nil && p != nil {
			err = sub.fold(p)
		}
		if err != nil {
			return nil, err
		}
	}
	run, err = spillfile.Create(h.tempDir, "sluice-agg-*.arrows")
	if err != nil {
		return nil, fmt.Errorf("%s: spill: %w", h.stage, err)
	}
	w := &runWriter{bw: bufio.NewWriterSize(run, 64<<10)}
	w.w = ipc.NewWriter(w.bw, ipc.WithSchema(h.out), ipc.WithAllocator(h.mem))
	err = sub.emit(ctx, w)
	if err == nil {
		err = w.finish(ctx)
	}
	if err != nil {
		spillfile.Remove(run)
		return nil, fmt.Errorf("%s: spill: %w", h.stage, err)
	}
	return run, nil
}

// runWriter is an operator that writes what it is pushed to a run.
type runWriter struct {
	bw *bufio.Writer
	w  *ipc.Writer
}

func (r *runWriter) push(_ context.Context, rec arrow.RecordBatch) error { return r.w.Write(rec) }
func (r *runWriter) finish(context.Context) error {
	if err := r.w.Close(); err != nil {
		return err
	}
	return r.bw.Flush()
}
func (r *runWriter) release() {}

// releaseSpill removes what a spill left.
func (h *hashAgg) releaseSpill() {
	if h.spilled == nil {
		return
	}
	for _, part := range h.spilled.parts {
		if part.f != nil {
			spillfile.Remove(part.f)
			part.f = nil
		}
	}
	h.spilled = nil
}
