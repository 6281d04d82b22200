package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Rebatch cuts a stream into the batches its rows' numbers say. column
// holds each row's number (int64, ascending): rows below tail whose
// numbers shifted right by shift are equal make one batch, and rows at
// or past tail are cut every JoinTailRows rows. A fan-out merge cuts
// batches its own way; this gives the stages after it the batches one
// process would have made, on which float sums depend.
func Rebatch(column string, shift uint, tail int64) Stage {
	return &rebatchStage{column: column, shift: shift, tail: tail}
}

// JoinTailRows is how many of a join's unmatched right rows make a batch
// (the right and full joins' last batches).
const JoinTailRows = outBatchRows

type rebatchStage struct {
	column string
	shift  uint
	tail   int64
}

func (s *rebatchStage) Name() string { return "rebatch" }

func (s *rebatchStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	i, err := colIndex("rebatch", in, s.column)
	if err != nil {
		return nil, err
	}
	if in.Field(i).Type.ID() != arrow.INT64 {
		return nil, invalidf("rebatch: column %q is a %s, not int64", s.column, in.Field(i).Type)
	}
	return &bound{name: "rebatch", out: in, newOp: func(next operator) (operator, error) {
		return &rebatchOp{s: s, col: i, out: in, mem: e.mem, next: next}, nil
	}}, nil
}

type rebatchOp struct {
	s       *rebatchStage
	col     int
	out     *arrow.Schema
	mem     memory.Allocator
	next    operator
	pending []arrow.RecordBatch // slices of the batch being gathered
	rows    int64
	key     int64
}

func (o *rebatchOp) keyOf(n int64) int64 {
	if n >= o.s.tail {
		return -1 // the tail: cut by count
	}
	return n >> o.s.shift
}

func (o *rebatchOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	nums := rec.Column(o.col).(*array.Int64)
	if nums.NullN() > 0 {
		return fmt.Errorf("rebatch: column %q has nulls", o.s.column)
	}
	n := int(rec.NumRows())
	start := 0
	for i := 0; i < n; i++ {
		k := o.keyOf(nums.Value(i))
		if len(o.pending) > 0 || start < i {
			if k != o.key || k == -1 && o.rows+int64(i-start) == JoinTailRows {
				if err := o.gather(rec, start, i); err != nil {
					return err
				}
				if err := o.flush(ctx); err != nil {
					return err
				}
				start = i
			}
		}
		o.key = k
	}
	return o.gather(rec, start, n)
}

// gather holds rows [lo, hi) of rec for the batch being gathered.
func (o *rebatchOp) gather(rec arrow.RecordBatch, lo, hi int) error {
	if hi <= lo {
		return nil
	}
	o.pending = append(o.pending, rec.NewSlice(int64(lo), int64(hi)))
	o.rows += int64(hi - lo)
	return nil
}

func (o *rebatchOp) flush(ctx context.Context) error {
	if len(o.pending) == 0 {
		return nil
	}
	b := o.pending[0]
	if len(o.pending) > 1 {
		var err error
		if b, err = concatBatches(o.mem, o.out, o.pending); err != nil {
			return err
		}
		defer b.Release()
	}
	err := o.next.push(ctx, b)
	releaseAll(o.pending)
	o.pending, o.rows = o.pending[:0], 0
	return err
}

func (o *rebatchOp) finish(ctx context.Context) error {
	if err := o.flush(ctx); err != nil {
		return err
	}
	return o.next.finish(ctx)
}

func (o *rebatchOp) release() { releaseAll(o.pending); o.pending = nil }
