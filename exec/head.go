package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// Head keeps the first n rows and stops reading after them.
func Head(n int64) Stage { return &headStage{n: n} }

type headStage struct{ n int64 }

func (s *headStage) Name() string { return "head" }

func (s *headStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	if s.n < 0 {
		return nil, invalidf("head: the row count must be >= 0, got %d", s.n)
	}
	return &bound{name: "head", out: in, newOp: func(next operator) (operator, error) {
		return &headOp{left: s.n, next: next}, nil
	}}, nil
}

type headOp struct {
	left int64
	next operator
	done bool
}

func (o *headOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	if o.done {
		return errEnough
	}
	n := rec.NumRows()
	if n > o.left {
		part := rec.NewSlice(0, o.left)
		defer part.Release()
		rec = part
		n = o.left
	}
	o.left -= n
	if n > 0 {
		if err := o.next.push(ctx, rec); err != nil {
			return err
		}
	}
	if o.left == 0 {
		// Finish what comes after now: the stages before this one stop
		// on errEnough without finishing.
		o.done = true
		if err := o.next.finish(ctx); err != nil {
			return err
		}
		return errEnough
	}
	return nil
}

func (o *headOp) finish(ctx context.Context) error {
	if o.done {
		return nil
	}
	o.done = true
	return o.next.finish(ctx)
}

func (o *headOp) release() {}
