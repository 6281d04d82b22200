package exec

import (
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Top keeps the n rows that come first in the order keys give, in that
// order; of rows that tie, the earlier in the input comes first. It holds
// only n rows, so it suits small n; for a large n use Sort then Head.
func Top(n int64, keys []SortKey) Stage { return &topStage{n: n, keys: keys} }

type topStage struct {
	n    int64
	keys []SortKey
}

func (s *topStage) Name() string { return "top" }

func (s *topStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	if s.n < 0 {
		return nil, invalidf("top: the row count must be >= 0, got %d", s.n)
	}
	ob, err := newOrderBy("top", in, s.keys)
	if err != nil {
		return nil, err
	}
	return &bound{name: "top", out: in, newOp: func(next operator) (operator, error) {
		return &topOp{n: int(s.n), ob: ob, schema: in, mem: e.mem, next: next}, nil
	}}, nil
}

type topOp struct {
	n      int
	ob     *orderBy
	schema *arrow.Schema
	mem    memory.Allocator
	next   operator
	cur    arrow.RecordBatch // the best rows so far, in order
	curKey []vec
}

func (o *topOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	rows := int(rec.NumRows())
	if rows == 0 || o.n == 0 {
		return nil
	}
	kv := o.ob.keys(rec)
	var refs []rowRef
	have := 0
	if o.cur != nil {
		have = int(o.cur.NumRows())
		for i := range have {
			refs = append(refs, rowRef{0, int32(i)})
		}
	}
	full := have == o.n
	for i := range rows {
		// Ties with the worst kept row lose: it came first.
		if full && o.ob.compare(kv, i, o.curKey, have-1) >= 0 {
			continue
		}
		refs = append(refs, rowRef{1, int32(i)})
	}
	if len(refs) == have {
		return nil
	}
	keys := [2][]vec{o.curKey, kv}
	slices.SortStableFunc(refs, func(a, b rowRef) int {
		return o.ob.compare(keys[a.Batch], int(a.Row), keys[b.Batch], int(b.Row))
	})
	refs = refs[:min(len(refs), o.n)]
	srcs := []arrow.RecordBatch{o.cur, rec}
	if o.cur == nil {
		srcs[0] = rec // never referenced
	}
	top, err := gatherRows(ctx, o.mem, o.schema, srcs, refs)
	if err != nil {
		return err
	}
	if o.cur != nil {
		o.cur.Release()
	}
	o.cur, o.curKey = top, o.ob.keys(top)
	return nil
}

func (o *topOp) finish(ctx context.Context) error {
	if o.cur != nil && o.cur.NumRows() > 0 {
		if err := o.next.push(ctx, o.cur); err != nil {
			return err
		}
	}
	return o.next.finish(ctx)
}

func (o *topOp) release() {
	if o.cur != nil {
		o.cur.Release()
		o.cur = nil
	}
}
