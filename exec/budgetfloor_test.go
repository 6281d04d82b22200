package exec

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// heldBudget is a budget of size bytes that another spillable consumer
// holds whole, as an aggregation holds its result while it sends it on.
// The consumer gives it back when the test ends.
func heldBudget(t *testing.T, size int64) (*memBudget, *reservation) {
	t.Helper()
	b := newMemBudget(size)
	other := b.reserve(0)
	if !other.grow(size) {
		t.Fatal("a consumer alone could not take the whole budget")
	}
	t.Cleanup(other.free)
	return b, other
}

// runOpen runs stages over src under b, spilling to dir, and returns the
// stream as IPC, the most spill files open while the source was read
// (a sort's runs, formed as its input comes) and the most open while the
// result flowed out.
func runOpen(t *testing.T, mem memory.Allocator, b *memBudget, dir string, src SourceStage, stages ...Stage) (out []byte, reading, writing int) {
	t.Helper()
	var buf bytes.Buffer
	var w *ipc.Writer
	sink := Collect(func(s *arrow.Schema) { w = ipc.NewWriter(&buf, ipc.WithSchema(s)) }, func(rec arrow.RecordBatch) error {
		writing = max(writing, openIn(t, dir))
		return w.Write(rec)
	})
	src = &seeOpen{SourceStage: src, see: func() { reading = max(reading, openIn(t, dir)) }}
	err := Run(withBudget(context.Background(), b), Pipeline{Source: src, Stages: append(stages, sink)},
		Options{Open: testOpen, Mem: mem, Workers: 1, TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openIn(t, dir); n != 0 {
		t.Fatalf("%d spill files still open after the run", n)
	}
	return buf.Bytes(), reading, writing
}

// seeOpen is a source that calls see before it reads each batch.
type seeOpen struct {
	SourceStage
	see func()
}

func (s *seeOpen) open(ctx context.Context, e *env) (Source, error) {
	src, err := s.SourceStage.open(ctx, e)
	if err != nil {
		return nil, err
	}
	return &seeOpenSource{Source: src, see: s.see}, nil
}

type seeOpenSource struct {
	Source
	see func()
}

func (s *seeOpenSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	s.see()
	return s.Source.Next(ctx)
}

// TestOrderHoldsFirstBatchInFullBudget: restoring dataset order with a
// budget another consumer holds whole still holds the first batch that
// must wait in memory, as it did before the budget was shared, instead
// of writing every waiting batch to a spill file.
func TestOrderHoldsFirstBatchInFullBudget(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	// Group 1's first batch comes before group 0's: it waits, alone.
	layout := posLayout(2)
	want, err := runStream(t, mem, posStream(t, mem, layout, nil, false), Options{}, Head(100))
	if err != nil {
		t.Fatal(err)
	}
	in := posStream(t, mem, layout, []int{2, 0, 1, 3}, true)
	b, _ := heldBudget(t, 1<<20)
	got, reading, writing := runOpen(t, mem, b, dir, ReadIPC(bytes.NewReader(in)), Head(100))
	if open := max(reading, writing); open != 0 {
		t.Errorf("restoring order spilled its only waiting batch (%d spill files open) though it held nothing", open)
	}
	if g, w := table(t, got), table(t, want); !slices.Equal(g, w) {
		t.Errorf("rows %q, want those of the stream in dataset order, %q", g, w)
	}
	if _, used, _ := b.stats(); used != 1<<20 {
		t.Errorf("%d bytes reserved after the run, want the other consumer's %d", used, 1<<20)
	}
}
