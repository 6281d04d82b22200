package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/freelist"
)

// Distinct keeps the first row, in stream order, of each distinct value
// of the columns on (every column when on is empty), all columns kept;
// nulls equal each other. Rows come out in key order, nulls last, as an
// aggregation's groups do, so the result does not depend on how the
// stream was split: each batch keeps its first rows, and folding those in
// stream order keeps the stream's.
func Distinct(on []string) Stage { return &distinctStage{on: on} }

type distinctStage struct{ on []string }

func (s *distinctStage) Name() string { return "distinct" }

func (s *distinctStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	names := s.on
	if len(names) == 0 {
		for _, f := range in.Fields() {
			names = append(names, f.Name)
		}
	}
	keys, err := newKeyEncoder("distinct", in, names)
	if err != nil {
		return nil, err
	}
	sortKeys := make([]SortKey, len(names))
	for i, n := range names {
		sortKeys[i] = SortKey{Column: n}
	}
	ob, err := newOrderBy("distinct", in, sortKeys)
	if err != nil {
		return nil, err
	}
	d := &distinctAgg{mem: e.mem, keys: keys, order: ob, out: in, index: map[string]struct{}{}}
	return &bound{name: "distinct", out: in, agg: d}, nil
}

type distinctAgg struct {
	mem   memory.Allocator
	keys  *keyEncoder
	order *orderBy
	out   *arrow.Schema
	rows  freelist.List[keyRows]

	// Folded state, touched only by fold, emit and release.
	index map[string]struct{}
	kept  []arrow.RecordBatch // the first rows of keys, in stream order
}

// distinctPartial is a batch's first row of each of its keys, in
// first-seen order, and those keys' bytes.
type distinctPartial struct {
	keys []string
	rec  arrow.RecordBatch
}

func (d *distinctAgg) partial(ctx context.Context, rec arrow.RecordBatch, keep []bool) (any, error) {
	n := int(rec.NumRows())
	if n == 0 {
		return nil, nil
	}
	gids := make([]int32, n)
	p := &distinctPartial{}
	var ints []int64
	if intGroupRows(d.keys, rec, keep, gids, &ints, nil) {
		p.keys = intKeyStrings(ints, 1)
	} else if !dictGroupRows(d.keys, rec, keep, gids, &p.keys) {
		kr := d.rows.Get()
		defer d.rows.Put(kr)
		d.keys.encode(rec, kr)
		groupRows(kr, keep, gids, &p.keys)
	}
	if len(p.keys) == 0 {
		return nil, nil
	}
	// Groups are numbered as first seen, so a group's first row is
	// the first row with a number not seen before.
	firsts := make([]int32, 0, len(p.keys))
	for i, g := range gids {
		if int(g) == len(firsts) {
			firsts = append(firsts, int32(i))
		}
	}
	out, err := takeRows(ctx, d.mem, rec, func(add func(int32)) {
		for _, i := range firsts {
			add(i)
		}
	}, len(firsts))
	if err != nil {
		return nil, err
	}
	p.rec = out
	return p, nil
}

func (d *distinctAgg) fold(pa any) error {
	p := pa.(*distinctPartial)
	var fresh []int32
	for g, k := range p.keys {
		if _, ok := d.index[k]; !ok {
			d.index[k] = struct{}{}
			fresh = append(fresh, int32(g))
		}
	}
	switch {
	case len(fresh) == len(p.keys):
		d.kept = append(d.kept, p.rec) // the partial's batch is ours now
		return nil
	case len(fresh) == 0:
		p.rec.Release()
		return nil
	}
	defer p.rec.Release()
	out, err := takeRows(context.Background(), d.mem, p.rec, func(add func(int32)) {
		for _, i := range fresh {
			add(i)
		}
	}, len(fresh))
	if err != nil {
		return err
	}
	d.kept = append(d.kept, out)
	return nil
}

func (d *distinctAgg) discard(pa any) {
	if p, ok := pa.(*distinctPartial); ok {
		p.rec.Release()
	}
}

func (d *distinctAgg) release() {
	releaseAll(d.kept)
	d.kept = nil
}

func (d *distinctAgg) emit(ctx context.Context, next operator) error {
	if len(d.kept) == 0 {
		return nil
	}
	rec, err := concatBatches(d.mem, d.out, d.kept)
	if err != nil {
		return err
	}
	defer rec.Release()
	kv := d.order.keys(rec)
	return emitTaken(ctx, d.mem, rec, d.order.perm(kv, int(rec.NumRows())), next)
}

// concatBatches is recs, of schema out, as one batch.
func concatBatches(mem memory.Allocator, out *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(out.Fields()))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	parts := make([]arrow.Array, len(recs))
	for c := range cols {
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			return nil, err
		}
		cols[c] = a
	}
	return array.NewRecordBatch(out, cols, rows), nil
}
