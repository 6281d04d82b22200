package collect

import (
	"context"
	"io"
	"math"
	"sync"
)

// Map runs fn on each input next returns, Options.Parallel at a time,
// and returns the flow of what fn emits. Each input is a part of its
// own, numbered from 0 in the order next returned it, so in Dataset
// order everything fn emits for one input comes before anything it emits
// for the next, and in Arrival order the part number keeps that order
// beside the item. next is called by one goroutine at a time, in part
// order, until it returns io.EOF; fn owns the input it is given. Memory
// is bounded as for Collect: a producer whose item finds no room waits,
// and reads no more input meanwhile.
func Map[In any, T Item](ctx context.Context, next func(context.Context) (In, error), fn func(ctx context.Context, part int, in In, emit func(T) error) error, opts Options) *Flow[T] {
	var (
		mu      sync.Mutex
		turn    int // the part whose input is read next
		ended   bool
		moved   = make(chan struct{}) // closed and replaced when turn moves and someone waits
		waiting bool
	)
	return Start(ctx, math.MaxInt, func(ctx context.Context, part int, emit func(T) error) error {
		mu.Lock()
		// Once the input has ended no later part exists: a part must not
		// wait for a turn that may never come. (A worker can take a part
		// number and then find it past the end the Flow has learned, and
		// leave without taking its turn: the parts after it would wait
		// for it forever.)
		for turn != part && !ended {
			ch := moved
			waiting = true
			mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			mu.Lock()
		}
		var in In
		err := errEnd
		if !ended {
			in, err = next(ctx)
			// After its end or an error the input is not read again.
			ended = err != nil
			if err == io.EOF {
				err = errEnd
			}
		}
		turn++
		if waiting {
			close(moved)
			moved, waiting = make(chan struct{}), false
		}
		mu.Unlock()
		if err != nil {
			return err
		}
		return fn(ctx, part, in, emit)
	}, opts)
}
