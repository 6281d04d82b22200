package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	cexec "github.com/apache/arrow-go/v18/arrow/compute/exec"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/internal/freelist"
	"github.com/sluice-data/sluice/mempool"
)

// Filter keeps the rows for which expr is true (a null is not true). The
// expression is parsed here, so a malformed one fails before anything
// runs, with the position of the problem; its columns and types are
// checked when the stage meets its input.
func Filter(text string) (Stage, error) {
	if _, err := expr.Parse(text); err != nil {
		return nil, stageExprError("filter", err)
	}
	return &filterStage{expr: text}, nil
}

type filterStage struct {
	expr string
	// name is what errors call it: "filter", or what it comes from
	// ("join --where").
	name string
}

func (s *filterStage) Name() string {
	if s.name != "" {
		return s.name
	}
	return "filter"
}

func (s *filterStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	c, err := expr.CompileFilter(s.expr, in)
	if err != nil {
		return nil, stageExprError(s.Name(), err)
	}
	return &bound{name: s.Name(), out: in, mapper: &filterer{name: s.Name(), pred: c, mem: e.mem}}, nil
}

type filterer struct {
	name    string
	pred    *expr.Expr
	mem     memory.Allocator
	scratch freelist.List[expr.Scratch] // each worker's evaluation memory
}

// mask says which rows of in the filter keeps; all is true when it keeps
// every row (keep may then be nil). keep lives in s, until s's next use.
func (f *filterer) mask(in arrow.RecordBatch, s *expr.Scratch) (keep []bool, all bool, err error) {
	n := int(in.NumRows())
	if n == 0 {
		return nil, false, nil
	}
	v, err := f.pred.EvalScratch(in, s)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", f.name, err)
	}
	if v.Const {
		if v.B[0] && v.IsValid(0) {
			return nil, true, nil
		}
		return make([]bool, n), false, nil
	}
	keep = v.B
	if v.Valid != nil {
		// v.B is the evaluation's own: the null rows can be cleared in it.
		for i, b := range v.B {
			keep[i] = b && v.Valid[i]
		}
	}
	all = true
	for _, k := range keep {
		all = all && k
	}
	return keep, all, nil
}

func (f *filterer) mapBatch(ctx context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := int(in.NumRows())
	if n == 0 {
		return nil, nil
	}
	sc := f.scratch.Get()
	defer f.scratch.Put(sc)
	v, err := f.pred.EvalScratch(in, sc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.name, err)
	}
	if v.Const {
		if v.B[0] && v.IsValid(0) {
			in.Retain()
			return in, nil
		}
		return nil, nil
	}
	keep := 0
	for i, b := range v.B {
		if b && v.IsValid(i) {
			keep++
		}
	}
	switch keep {
	case 0:
		return nil, nil
	case n:
		in.Retain()
		return in, nil
	}
	// The rows kept, as runs [start, end): a selective filter gives many
	// short runs, a loose one (the usual case before an aggregation) a
	// few long ones, which copy in one piece.
	var runs [][2]int
	for i := 0; i < n; {
		if !v.B[i] || !v.IsValid(i) {
			i++
			continue
		}
		j := i + 1
		for j < n && v.B[j] && v.IsValid(j) {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	if len(runs) > keep/8 {
		// Short runs: gather row by row.
		return takeRows(ctx, f.mem, in, func(add func(int32)) {
			for _, r := range runs {
				for i := r[0]; i < r[1]; i++ {
					add(int32(i))
				}
			}
		}, keep)
	}
	return copyRuns(ctx, f.mem, in, runs, keep)
}

// copyRuns makes a batch of the rows of in that runs lists, copying each
// run of a column without nulls in one piece; other columns are taken
// row by row.
func copyRuns(ctx context.Context, mem memory.Allocator, in arrow.RecordBatch, runs [][2]int, n int) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, in.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var idx arrow.Array
	defer func() {
		if idx != nil {
			idx.Release()
		}
	}()
	for i, col := range in.Columns() {
		if c := copyRunsFixed(mem, col, runs, n); c != nil {
			cols[i] = c
			continue
		}
		if idx == nil {
			b := array.NewInt32Builder(mem)
			b.Reserve(n)
			for _, r := range runs {
				for j := r[0]; j < r[1]; j++ {
					b.UnsafeAppend(int32(j))
				}
			}
			idx = b.NewInt32Array()
			b.Release()
		}
		out, err := takeArray(ctx, mem, col, idx)
		if err != nil {
			return nil, err
		}
		cols[i] = out
	}
	return array.NewRecordBatch(in.Schema(), cols, int64(n)), nil
}

// copyRunsFixed copies the runs of a fixed-width column without nulls
// (for a dictionary column, its indices, keeping its dictionary), or
// returns nil for any other column.
func copyRunsFixed(mem memory.Allocator, col arrow.Array, runs [][2]int, n int) arrow.Array {
	if col.NullN() > 0 {
		return nil
	}
	d := col.Data()
	var dict arrow.ArrayData
	if d.DataType().ID() == arrow.DICTIONARY {
		dict = d.Dictionary()
		if dict == nil {
			return nil
		}
		d = col.(*array.Dictionary).Indices().Data()
	}
	fw, ok := d.DataType().(arrow.FixedWidthDataType)
	if !ok || fw.BitWidth()%8 != 0 || d.DataType().ID() == arrow.DICTIONARY || len(d.Buffers()) != 2 || d.Buffers()[1] == nil {
		return nil
	}
	w := fw.BitWidth() / 8
	src := d.Buffers()[1].Bytes()[d.Offset()*w:]
	vals := mempool.DirtyBuffer(mem, n*w) // the runs fill it
	defer vals.Release()
	out := vals.Bytes()
	pos := 0
	for _, r := range runs {
		pos += copy(out[pos:], src[r[0]*w:r[1]*w])
	}
	data := array.NewData(col.DataType(), n, []*memory.Buffer{nil, vals}, nil, 0, 0)
	defer data.Release()
	if dict != nil {
		data.SetDictionary(dict)
	}
	return array.MakeFromData(data)
}

// takeRows makes a batch of the rows of in that rows lists, in that order.
func takeRows(ctx context.Context, mem memory.Allocator, in arrow.RecordBatch, rows func(add func(int32)), n int) (arrow.RecordBatch, error) {
	b := array.NewInt32Builder(mem)
	defer b.Release()
	b.Reserve(n)
	rows(b.UnsafeAppend)
	idx := b.NewInt32Array()
	defer idx.Release()
	return takeBatch(ctx, mem, in, idx)
}

// takeBatch gathers the rows idx names from every column of in.
func takeBatch(ctx context.Context, mem memory.Allocator, in arrow.RecordBatch, idx arrow.Array) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, in.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, col := range in.Columns() {
		out, err := takeArray(ctx, mem, col, idx)
		if err != nil {
			return nil, err
		}
		cols[i] = out
	}
	return array.NewRecordBatch(in.Schema(), cols, int64(idx.Len())), nil
}

func takeArray(ctx context.Context, mem memory.Allocator, col, idx arrow.Array) (arrow.Array, error) {
	// One batch per worker already: no goroutines per column.
	ec := compute.DefaultExecCtx()
	ec.NumParallel = 1
	ctx = compute.SetExecCtx(cexec.WithAllocator(ctx, mem), ec)
	return compute.TakeArrayOpts(ctx, col, idx, compute.TakeOptions{BoundsCheck: false})
}
