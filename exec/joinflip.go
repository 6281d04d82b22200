package exec

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluice-data/sluice/expr"
)

// A semi or anti join whose right side outgrew its memory need not be a
// grace join: when its left side is small (TPC-H Q4's orders of a quarter
// against the lineitems late for them, Q21's lineitems of one nation's
// suppliers against all lineitems), the left side is the one to index. A
// flipJoin holds the left batches while they cost (sideCost) up to the
// join's budget, the bound its table always has; if the left side ends
// there, it indexes the left rows by key, reads the right side's parts
// back once, marking each left row that a right row matches (--where
// holding), and sends the left rows that matched (semi) or did not
// (anti), in their order, batch by batch. Past the budget, the graceOp
// spills the held batches and goes on as a grace join. Which way a join
// goes depends on sizes alone, and both give the same rows in the same
// order.
type flipJoin struct {
	e    *env
	how  string
	j    *joiner // the left side as it is and the right side's parts
	next operator
	held []arrow.RecordBatch
	res  *reservation // what held costs (sideCost), within the join's budget
	// --where is evaluated over pairs of the columns it reads alone
	// (lcols of the left side, rcols of the right side's), of schema
	// cand: gathering the others for every pair cost Q21 a third of its
	// time.
	where        *expr.Expr
	lcols, rcols []int
	cand         *arrow.Schema
}

func newFlipJoin(s *joinStage, e *env, in *arrow.Schema, next operator) (*flipJoin, error) {
	right := s.pre.schema
	if s.pre.flat {
		right = s.pre.flatSchema
	}
	j, err := newJoiner(s, e, in, right)
	if err != nil {
		return nil, err
	}
	f := &flipJoin{e: e, how: s.o.How, j: j, next: next, where: j.where, cand: j.joined, res: e.budget.reserve(joinBudget(e, s.o))}
	if j.where != nil {
		f.narrow(s.o.Where)
	}
	return f, nil
}

// narrow has --where read the columns it names alone, if it compiles
// over them (else it reads every column, as the join in memory does).
func (f *flipJoin) narrow(where string) {
	j := f.j
	names, ok := exprColumns(where)
	if !ok {
		return
	}
	var lcols, rcols []int
	var fields []arrow.Field
	nin := j.in.NumFields()
	for i, fd := range j.joined.Fields() {
		if !slices.Contains(names, fd.Name) {
			continue
		}
		if i < nin {
			lcols = append(lcols, i)
		} else {
			rcols = append(rcols, j.rightKeep[i-nin])
		}
		fields = append(fields, fd)
	}
	cand := arrow.NewSchema(fields, nil)
	w, err := expr.CompileFilter(where, cand)
	if err != nil {
		return
	}
	f.where, f.lcols, f.rcols, f.cand = w, lcols, rcols, cand
}

// hold keeps rec if the run's budget has room for the left batches held,
// rec's cost counted, within the join's; else it says false and the
// caller takes the held ones.
func (f *flipJoin) hold(rec arrow.RecordBatch, keys *keyEncoder) bool {
	if !f.res.grow(sideCost(rec, keys)) {
		return false
	}
	rec.Retain()
	f.held = append(f.held, rec)
	return true
}

func (f *flipJoin) release() {
	releaseAll(f.held)
	f.held = nil
	f.res.free()
}

// join joins the held left batches with the right side's parts in side
// and sends the rows of the join on.
func (f *flipJoin) join(ctx context.Context, side *sideBatches, keys *keyEncoder, intKey bool) error {
	if len(f.held) == 0 {
		return nil
	}
	matched, err := f.match(ctx, side, keys, intKey)
	if err != nil {
		return err
	}
	want := f.how == "semi"
	at := 0
	for i, b := range f.held {
		n := int(b.NumRows())
		var rows []int32
		for r := range n {
			if matched[at+r] == want {
				rows = append(rows, int32(r))
			}
		}
		at += n
		var out arrow.RecordBatch
		switch len(rows) {
		case 0:
		case n:
			out = b
			out.Retain()
		default:
			if out, err = takeRows(ctx, f.e.mem, b, func(add func(int32)) {
				for _, r := range rows {
					add(r)
				}
			}, len(rows)); err != nil {
				return err
			}
		}
		// What is sent is the next stage's to hold: the batch is let go
		// here, so the left side is not held twice.
		b.Release()
		f.held[i] = nil
		if out == nil {
			continue
		}
		err = f.next.push(ctx, out)
		out.Release()
		if err != nil {
			return err
		}
	}
	f.held = nil
	return nil
}

// match marks the held left rows (numbered through the batches) that a
// row of the right side's parts matches.
func (f *flipJoin) match(ctx context.Context, side *sideBatches, keys *keyEncoder, intKey bool) ([]bool, error) {
	n := 0
	for _, b := range f.held {
		n += int(b.NumRows())
	}
	if n > 1<<31-2 {
		return nil, fmt.Errorf("join (left side): %d rows, more than a join holds (2^31)", n)
	}
	t := &joinTable{arrays: tableMem{mem: f.e.mem}}
	defer t.release()
	t.index(f.held, keys, intKey, n)
	if intKey {
		t.intHead.withBits()
	}
	matched := make([]bool, n)
	rkeys := f.j.rkeys
	var kr keyRows
	var ints []int64
	var p pairs // left rows as placed in t.refs, right rows of one batch
	parts, schema := side.parts, side.schema
	if side.flat {
		parts, schema = [][]spillSpan{side.spans}, side.flatSchema
	}
	for _, spans := range parts {
		for _, sp := range spans {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			rec, err := side.spill.read(sp.off, sp.n, schema)
			if err != nil {
				return nil, err
			}
			if intKey {
				ints = intValues(rec.Column(rkeys.cols[0].idx), ints)
			} else {
				rkeys.encode(rec, &kr)
			}
			nulls := keyNulls(rec, rkeys)
			p.L, p.R = p.L[:0], p.R[:0]
			for r := range int(rec.NumRows()) {
				if nulls != nil && nulls[r] {
					continue
				}
				var h int32
				var ok bool
				if intKey {
					h, ok = t.intHead.find(ints[r])
				} else {
					h, ok = t.head.get(string(kr.row(r)))
				}
				if !ok {
					continue
				}
				lo, hi := t.span(h)
				if f.j.where == nil {
					// A key's rows match together: a key whose first row
					// is marked is marked through.
					if !matched[t.rowNumber(t.refs[lo])] {
						for _, ref := range t.refs[lo:hi] {
							matched[t.rowNumber(ref)] = true
						}
					}
					continue
				}
				for k := lo; k < hi; k++ {
					p.L = append(p.L, k)
					p.R = append(p.R, rowRef{Row: int32(r)})
				}
			}
			if len(p.L) > 0 {
				err = f.holds(ctx, t, rec, p, matched)
			}
			rec.Release()
			if err != nil {
				return nil, err
			}
		}
	}
	return matched, nil
}

// holds marks the left rows of the pairs p (left rows as placed in t.refs,
// right rows of rec) for which --where holds; it sees every pair, as the
// join in memory does, so that it fails where that one would.
func (f *flipJoin) holds(ctx context.Context, t *joinTable, rec arrow.RecordBatch, p pairs, matched []bool) error {
	for lo := 0; lo < len(p.L); lo += outBatchRows {
		hi := min(lo+outBatchRows, len(p.L))
		refs := make([]rowRef, hi-lo)
		for i, l := range p.L[lo:hi] {
			refs[i] = t.refs[l]
		}
		cand, err := f.pairs(ctx, rec, refs, p.R[lo:hi])
		if err != nil {
			return err
		}
		v, err := f.where.Eval(cand)
		if err != nil {
			cand.Release()
			return fmt.Errorf("join --where: %w", err)
		}
		for i := range hi - lo {
			if v.IsValid(i) && (v.Const && v.B[0] || !v.Const && v.B[i]) {
				matched[t.rowNumber(t.refs[p.L[lo+i]])] = true
			}
		}
		cand.Release()
	}
	return nil
}

// pairs is the batch (of schema f.cand) of the held left rows lrefs
// beside the rows rrefs of rec.
func (f *flipJoin) pairs(ctx context.Context, rec arrow.RecordBatch, lrefs, rrefs []rowRef) (arrow.RecordBatch, error) {
	j := f.j
	lcols, rcols := f.lcols, f.rcols
	if f.where == j.where {
		lcols, rcols = nil, j.rightKeep
		for i := range j.in.NumFields() {
			lcols = append(lcols, i)
		}
	}
	cols := make([]arrow.Array, 0, len(lcols)+len(rcols))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	arrs := make([]arrow.Array, len(f.held))
	for _, i := range lcols {
		for b, h := range f.held {
			arrs[b] = h.Column(i)
		}
		c, err := gatherColumn(ctx, f.e.mem, j.in.Field(i).Type, arrs, lrefs)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	for _, i := range rcols {
		c, err := gatherColumn(ctx, f.e.mem, j.right.Field(i).Type, []arrow.Array{rec.Column(i)}, rrefs)
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return array.NewRecordBatch(f.cand, cols, int64(len(lrefs))), nil
}
