package collect

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/scan"
)

// peakAllocator counts the bytes allocated and not yet freed, and the
// most there ever were.
type peakAllocator struct {
	memory.Allocator
	cur, peak atomic.Int64
}

func newPeakAllocator(t *testing.T) *peakAllocator {
	t.Helper()
	c := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { c.AssertSize(t, 0) })
	return &peakAllocator{Allocator: c}
}

func (a *peakAllocator) add(n int64) {
	v := a.cur.Add(n)
	for {
		p := a.peak.Load()
		if v <= p || a.peak.CompareAndSwap(p, v) {
			return
		}
	}
}

func (a *peakAllocator) Allocate(n int) []byte {
	a.add(int64(n))
	return a.Allocator.Allocate(n)
}

func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	a.add(int64(n - len(b)))
	return a.Allocator.Reallocate(n, b)
}

func (a *peakAllocator) Free(b []byte) {
	a.add(-int64(len(b)))
	a.Allocator.Free(b)
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "part", Type: arrow.PrimitiveTypes.Int64},
	{Name: "batch", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64},
}, nil)

const testRows = 1024

// makeBatch builds batch i of part p: its columns say where it belongs.
func makeBatch(mem memory.Allocator, p, i int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	for r := range testRows {
		b.Field(0).(*array.Int64Builder).Append(int64(p))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		b.Field(2).(*array.Int64Builder).Append(int64(p*1_000_000 + i*testRows + r))
	}
	return b.NewRecordBatch()
}

// plan says how many batches each part has and how long each takes.
type plan struct {
	batches []int
	delay   func(part, batch int) time.Duration
	// fail, when set, is called before each batch (and with batch ==
	// batches[part] after the last): a non-nil error is returned there.
	fail func(part, batch int) error

	mu       sync.Mutex
	start    time.Time
	finished []time.Duration // since start, per part
}

func (p *plan) producer(mem memory.Allocator) Producer {
	p.start = time.Now()
	p.finished = make([]time.Duration, len(p.batches))
	return func(ctx context.Context, part int, emit func(scan.Batch) error) error {
		n := p.batches[part]
		for i := 0; i <= n; i++ {
			if p.fail != nil {
				if err := p.fail(part, i); err != nil {
					return err
				}
			}
			if i == n {
				break
			}
			if p.delay != nil {
				if d := p.delay(part, i); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return context.Cause(ctx)
					}
				}
			}
			rec := makeBatch(mem, part, i)
			if err := emit(scan.Batch{RecordBatch: rec, Pos: scan.Position{File: part, Batch: i, Last: i == n-1}}); err != nil {
				return err
			}
		}
		p.mu.Lock()
		p.finished[part] = time.Since(p.start)
		p.mu.Unlock()
		return nil
	}
}

func randomPlan(rng *rand.Rand, parts, maxBatches int, maxDelay time.Duration) *plan {
	p := &plan{batches: make([]int, parts)}
	delays := make([][]time.Duration, parts)
	for i := range p.batches {
		p.batches[i] = rng.IntN(maxBatches + 1)
		delays[i] = make([]time.Duration, p.batches[i])
		for j := range delays[i] {
			delays[i][j] = time.Duration(rng.Int64N(int64(maxDelay) + 1))
		}
	}
	p.delay = func(part, batch int) time.Duration { return delays[part][batch] }
	return p
}

// got is a batch as a consumer saw it.
type got struct{ part, batch int }

func idOf(rec arrow.RecordBatch) got {
	return got{int(rec.Column(0).(*array.Int64).Value(0)), int(rec.Column(1).(*array.Int64).Value(0))}
}

// drain reads a stream to the end, checking each batch's position
// against its contents.
func drain(t *testing.T, s *Stream) ([]got, error) {
	t.Helper()
	var out []got
	err := Drain(s, func(b Batch) error {
		g := idOf(b.RecordBatch)
		if g.part != b.Pos.Part || g.batch != b.Pos.Batch {
			t.Errorf("batch %v delivered with position %v", g, b.Pos)
		}
		out = append(out, g)
		return nil
	})
	return out, err
}

// inDatasetOrder lists every batch of a plan in dataset order.
func inDatasetOrder(batches []int) []got {
	var out []got
	for p, n := range batches {
		for i := range n {
			out = append(out, got{p, i})
		}
	}
	return out
}
