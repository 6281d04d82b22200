package collect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// mapInput is a source of n inputs for Map that fails the test if it is
// read by two goroutines at once or read again after its end; failAt,
// when in range, is the read that returns errInjected instead.
type mapInput struct {
	t         *testing.T
	n, failAt int
	reading   atomic.Int32
	mu        sync.Mutex
	read      int
	ended     bool
}

func (in *mapInput) next(ctx context.Context) (int, error) {
	if in.reading.Add(1) != 1 {
		in.t.Error("next called by two goroutines at once")
	}
	defer in.reading.Add(-1)
	runtime.Gosched()
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.ended {
		in.t.Error("next called again after its end or error")
	}
	i := in.read
	in.read++
	switch {
	case i == in.failAt:
		in.ended = true
		return 0, errInjected
	case i >= in.n:
		in.ended = true
		return 0, io.EOF
	}
	return i, nil
}

// mapOutputs is how many batches fn emits for input i: none for some, as
// a filter that keeps no row.
func mapOutputs(i int) int { return i % 3 }

// TestMap: each input is mapped once; in dataset order the batches come
// in input order, in arrival order all of them come, whatever order the
// workers finish in; an error of the input or of fn ends the flow with
// it; a consumer that stops early leaks nothing.
func TestMap(t *testing.T) {
	for seed := range uint64(3) {
		for _, order := range []Order{Arrival, Dataset} {
			for _, c := range []struct {
				name             string
				n, failAt, stop  int
				fnFail           int
				wantErr, wantAll bool
			}{
				{name: "all", n: 60, failAt: -1, fnFail: -1, stop: -1, wantAll: true},
				{name: "none", n: 0, failAt: -1, fnFail: -1, stop: -1, wantAll: true},
				{name: "input-error", n: 60, failAt: 17, fnFail: -1, stop: -1, wantErr: true},
				{name: "fn-error", n: 60, failAt: -1, fnFail: 23, stop: -1, wantErr: true},
				{name: "consumer-stops", n: 60, failAt: -1, fnFail: -1, stop: 5},
			} {
				t.Run(fmt.Sprintf("seed=%d/%v/%s", seed, order, c.name), func(t *testing.T) {
					mem := newPeakAllocator(t)
					rng := rand.New(rand.NewPCG(seed, 2))
					yields := make([]int, c.n+1)
					for i := range yields {
						yields[i] = rng.IntN(50)
					}
					in := &mapInput{t: t, n: c.n, failAt: c.failAt}
					f := Map(context.Background(), in.next, func(ctx context.Context, part, i int, emit func(Batch) error) error {
						if part != i {
							t.Errorf("input %d handed to part %d", i, part)
						}
						for range yields[i] {
							runtime.Gosched() // finish out of order
						}
						if i == c.fnFail {
							return errInjected
						}
						for j := range mapOutputs(i) {
							if err := emit(Batch{RecordBatch: makeBatch(mem, i, j), Pos: Pos{Part: part}}); err != nil {
								return err
							}
						}
						return nil
					}, Options{Order: order, Parallel: 1 + int(seed)*2, Window: 1 + int(seed)})
					var out []got
					for f.Next() {
						b := f.Batch()
						g := idOf(b.RecordBatch)
						if g.part != b.Pos.Part {
							t.Errorf("batch %v delivered as part %d", g, b.Pos.Part)
						}
						out = append(out, g)
						b.Release()
						if len(out) == c.stop {
							break
						}
					}
					err := f.Err()
					f.Close()
					if c.wantErr != errors.Is(err, errInjected) || (!c.wantErr && err != nil) {
						t.Fatalf("error %v", err)
					}
					if !c.wantAll {
						return
					}
					var want []got
					for i := range c.n {
						for j := range mapOutputs(i) {
							want = append(want, got{i, j})
						}
					}
					if order == Arrival {
						slices.SortFunc(out, func(a, b got) int {
							if a.part != b.part {
								return a.part - b.part
							}
							return a.batch - b.batch
						})
					}
					if !slices.Equal(out, want) {
						t.Fatalf("got %v, want %v", out, want)
					}
				})
			}
		}
	}
}

// TestMapEndsWhenTheInputEndsEarly: with many producers and an input of
// a few items, a producer that takes a part number past the end the Flow
// has just learned leaves without taking its turn; a later part's
// producer must not wait for that turn. Before the fix the race hung one
// run in some thousands (exec's TestDistinct once, in CI); each run here
// must end, and they all run within a bound.
func TestMapEndsWhenTheInputEndsEarly(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5000 {
			n := i % 4
			in := &mapInput{t: t, n: n, failAt: -1}
			f := Map(context.Background(), in.next, func(ctx context.Context, part, i int, emit func(Batch) error) error {
				return nil
			}, Options{Order: Dataset, Parallel: 16})
			for f.Next() {
				f.Batch().Release()
			}
			if err := f.Err(); err != nil {
				t.Errorf("run %d: %v", i, err)
			}
			f.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a Map did not end: a part waits for a turn that never comes")
	}
}
