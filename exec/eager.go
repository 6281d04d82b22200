package exec

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/expr"
)

// Eager aggregation. A join followed by an aggregation by left columns of
// counts of right columns makes a row for every pair only to count it:
// TPC-H Q13 joins 150 thousand customers to 1.5 million orders, then
// counts each customer's orders. Counted by the join's keys first, the
// right side is a row a key, each left row joins one, and the aggregation
// after sums those counts: a left row with d matches counted them before
// as d rows, and now as one row holding d; a group of left rows adds
// theirs up either way. A left join's row that matches nothing has no
// count (null), where it counted no value before: such counts are 0
// (zeroNulls). Other aggregates are left as written: float sums would add
// in another order, a mean is not a mean of means, and a least or
// greatest float with NaN among the values depends on how they are
// grouped.

// eagerAggs returns stages with each join that an aggregation as above
// follows rewritten so; stages itself when there is none. A rewritten
// aggregation sums, so it is not rewritten again.
func eagerAggs(stages []Stage) []Stage {
	out := stages
	for i := 0; i+1 < len(out); i++ {
		js, ok := out[i].(*joinStage)
		a, ok2 := out[i+1].(*aggStage)
		if !ok || !ok2 {
			continue
		}
		if rewritten, ok := eagerJoin(js, a); ok {
			out = slices.Concat(out[:i], rewritten, out[i+2:])
			i += len(rewritten) - 1
		}
	}
	return out
}

// eagerName is the column of a's j-th aggregate on the right side: a name
// no parsed pipeline gives (it is never written as text), so it clashes
// with no left column.
func eagerName(j int) string { return fmt.Sprintf("\x00eager%d", j) }

// eagerJoin is js and a rewritten (the join, the aggregation and
// zeroNulls), or false when the rewrite does not apply.
func eagerJoin(js *joinStage, a *aggStage) ([]Stage, bool) {
	o := js.o
	if (o.How != "" && o.How != "inner" && o.How != "left") || o.Where != "" || o.Prefix != "" ||
		js.pre != nil || js.reduced || a.whole || len(a.keys) == 0 {
		return nil, false
	}
	right, known := outputNames(js.other.Stages)
	if !known {
		return nil, false
	}
	// A key named alike on both sides is the left's column after the
	// join (a left join's unmatched rows keep their value).
	shared := map[string]bool{}
	for k := range o.Left {
		if o.Left[k] == o.Right[k] {
			shared[o.Left[k]] = true
		}
	}
	fromRight := func(c string) bool { return slices.Contains(right, c) && !shared[c] }
	for _, k := range a.keys {
		if fromRight(k) {
			return nil, false
		}
	}
	var counts []string
	pre := &aggStage{name: "agg-by", keys: o.Right, input: a.input}
	post := &aggStage{name: a.name, keys: a.keys, input: a.input}
	for j, s := range a.aggs {
		if s.arg == nil || s.name == "" || s.fn != aggCount {
			return nil, false
		}
		cols := expr.ColumnNames(s.arg)
		if len(cols) == 0 || slices.ContainsFunc(cols, func(c string) bool { return !fromRight(c) }) {
			return nil, false
		}
		// A left join's unmatched row has nulls for the right columns, and
		// an expression of them may not be null there (coalesce(x, 0), x
		// is null): counted row by row, but not by its key's count. A
		// column alone is null there.
		if _, col := s.arg.(*expr.Column); o.How == "left" && !col {
			return nil, false
		}
		pre.aggs = append(pre.aggs, aggSpec{fn: aggCount, arg: s.arg, name: eagerName(j), call: s.call})
		counts = append(counts, s.name)
		post.aggs = append(post.aggs, aggSpec{fn: aggSum, arg: &expr.Column{Name: eagerName(j)}, name: s.name, call: s.call})
	}
	join := *js
	join.other.Stages = append(slices.Clone(js.other.Stages), pre)
	return []Stage{&join, post, &zeroNullsStage{cols: counts}}, true
}

// zeroNullsStage makes nulls of its int64 columns 0 and the columns not
// nullable: counts combined by eagerAggs, as a count is.
type zeroNullsStage struct{ cols []string }

func (s *zeroNullsStage) Name() string { return "agg-by" }

func (s *zeroNullsStage) readsColumns(out []string) []string {
	if out == nil {
		return nil
	}
	return union(out, s.cols...)
}

func (s *zeroNullsStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	fields := slices.Clone(in.Fields())
	z := &zeroer{mem: e.mem}
	for _, c := range s.cols {
		i, err := colIndex("agg-by", in, c)
		if err != nil {
			return nil, err
		}
		if fields[i].Type.ID() != arrow.INT64 {
			return nil, fmt.Errorf("agg-by: count %s is %s, not int64", c, fields[i].Type)
		}
		fields[i].Nullable = false
		z.idx = append(z.idx, i)
	}
	md := in.Metadata()
	z.out = arrow.NewSchema(fields, &md)
	return &bound{name: "agg-by", out: z.out, mapper: z}, nil
}

type zeroer struct {
	mem memory.Allocator
	out *arrow.Schema
	idx []int
}

func (z *zeroer) mapBatch(_ context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := slices.Clone(in.Columns())
	var made []arrow.Array
	defer func() {
		for _, c := range made {
			c.Release()
		}
	}()
	for _, i := range z.idx {
		c := cols[i].(*array.Int64)
		if c.NullN() == 0 {
			continue
		}
		b := array.NewInt64Builder(z.mem)
		b.Reserve(c.Len())
		for r, v := range c.Int64Values() {
			if c.IsNull(r) {
				v = 0
			}
			b.UnsafeAppend(v)
		}
		cols[i] = b.NewArray()
		b.Release()
		made = append(made, cols[i])
	}
	return array.NewRecordBatch(z.out, cols, in.NumRows()), nil
}
