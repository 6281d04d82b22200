package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowsize"
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

var sortSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "s", Type: arrow.BinaryTypes.String},
}, nil)

// sortBatches are n batches of rows rows: keys with many ties (k in
// [0, keys)), each row's place in the input (seq), and a string.
func sortBatches(t *testing.T, seed uint64, n, rows, keys int) []arrow.RecordBatch {
	mem := checkedMem(t)
	r := rand.New(rand.NewPCG(seed, 3))
	var out []arrow.RecordBatch
	for b := range n {
		bld := array.NewRecordBuilder(mem, sortSchema)
		for i := range rows {
			bld.Field(0).(*array.Int64Builder).Append(int64(r.IntN(keys)))
			bld.Field(1).(*array.Int64Builder).Append(int64(b*rows + i))
			bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("s%05d", r.IntN(100000)))
		}
		out = append(out, bld.NewRecordBatch())
		bld.Release()
	}
	t.Cleanup(func() { releaseAll(out) })
	return out
}

// sortCost is the most any of batches costs a sort by nkeys keys.
func sortCost(batches []arrow.RecordBatch, nkeys int) int64 {
	var most int64
	for _, b := range batches {
		most = max(most, arrowsize.Record(b)+b.NumRows()*int64(8+8*nkeys))
	}
	return most
}

// checkSorted fails unless the rows of out are in k order and, within a
// k, in input order.
func checkSorted(t *testing.T, out []byte, rows int) {
	t.Helper()
	n := 0
	var lastK, lastSeq int64 = -1, -1
	err := Run(context.Background(), Pipeline{Source: bytesSource(out), Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
		k, seq := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
		for i := range int(rec.NumRows()) {
			if k.Value(i) < lastK || k.Value(i) == lastK && seq.Value(i) <= lastSeq {
				return fmt.Errorf("row %d: k %d seq %d after k %d seq %d", n, k.Value(i), seq.Value(i), lastK, lastSeq)
			}
			lastK, lastSeq = k.Value(i), seq.Value(i)
			n++
		}
		return nil
	})}}, Options{Open: testOpen})
	if err != nil {
		t.Fatal(err)
	}
	if n != rows {
		t.Fatalf("%d rows, want %d", n, rows)
	}
}

// TestSortRunsWhenBudgetHeld: a sort whose budget another consumer holds
// whole, past its share (as an aggregation holds its result while it
// sends it to the sort), still forms runs of many batches: it holds up
// to a floor within its share before it spills, and goes past the budget
// by no more than that floor. Only when what is pinned leaves it no share
// at all does it spill a batch at a time, holding none past the budget.
// The rows are those of a sort in memory, byte for byte.
func TestSortRunsWhenBudgetHeld(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	const size = 1 << 20
	const nb = 60
	batches := sortBatches(t, 1, nb, 1000, 50)
	cost := sortCost(batches, 1)
	if nb*cost < 2*size {
		t.Fatalf("the input costs %d bytes to sort: want it well past the budget %d", nb*cost, size)
	}
	src := func() SourceStage { return FromBatches(sortSchema, batches...) }
	sort := func() Stage { return Sort([]SortKey{{Column: "k"}}) }
	roomy := newMemBudget(1 << 30)
	want, _, runs := runOpen(t, mem, roomy, dir, src(), sort())
	if runs != 0 {
		t.Fatalf("a sort with room spilled %d runs", runs)
	}
	checkSorted(t, want, nb*1000)

	t.Run("spillable", func(t *testing.T) {
		b, other := heldBudget(t, size)
		got, _, runs := runOpen(t, mem, b, dir, src(), sort())
		_, used, peak := b.stats()
		// Its share is half the budget, the other consumer holding rows too.
		floor := int64(size / 2)
		t.Logf("%d batches of at most %d bytes: %d runs; reserved at most %d of %d", nb, cost, runs, peak, size)
		if runs < 2 {
			t.Errorf("%d runs: want the sort to spill, the budget being full", runs)
		}
		if runs > nb/4 {
			t.Errorf("%d runs of %d batches: want runs of at least 4 batches (%d bytes within its share)", runs, nb, floor)
		}
		if peak > size+floor {
			t.Errorf("reserved %d bytes at once: past the budget %d by more than the sort's floor %d", peak, size, floor)
		}
		if used != other.held {
			t.Errorf("%d bytes reserved after the run, want the other consumer's %d", used, other.held)
		}
		if !bytes.Equal(got, want) {
			t.Error("the rows differ from those sorted in memory")
		}
	})

	t.Run("pinned", func(t *testing.T) {
		b, other := heldBudget(t, size)
		other.pin() // the budget truly has nothing for the sort
		got, _, runs := runOpen(t, mem, b, dir, src(), sort())
		_, used, peak := b.stats()
		t.Logf("%d batches: %d runs; reserved at most %d of %d", nb, runs, peak, size)
		if runs != nb {
			t.Errorf("%d runs: want one per batch, nothing being left to share", runs)
		}
		if peak > size {
			t.Errorf("reserved %d bytes at once, past the budget %d", peak, size)
		}
		if used != other.held {
			t.Errorf("%d bytes reserved after the run, want the other consumer's %d", used, other.held)
		}
		if !bytes.Equal(got, want) {
			t.Error("the rows differ from those sorted in memory")
		}
	})
}

// TestSortMergeFanIn: a sort under a tiny budget over many small batches
// spills far more runs than a merge reads at once (sortFanIn). It merges
// them as they come, sortFanIn of one level into one of the next, and at
// the end the last ones until sortFanIn are left: fewer than sortFanIn
// of each level are ever open while it reads its input, sortFanIn at
// most while it merges them out, and the rows are those of the sort in
// memory, byte for byte, ties in input order. Before, every run stayed
// open (a descriptor each, and in the merge a read buffer and a batch).
func TestSortMergeFanIn(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	const size = 8 << 10
	const nb = 401
	batches := sortBatches(t, 2, nb, 100, 20)
	cost := sortCost(batches, 1)
	src := func() SourceStage { return FromBatches(sortSchema, batches...) }
	sort := func() Stage { return Sort([]SortKey{{Column: "k"}}) }
	want, _, _ := runOpen(t, mem, newMemBudget(1<<30), dir, src(), sort())
	checkSorted(t, want, nb*100)
	// No run holds more than the budget, and each batch fits in it: the
	// input makes at least nb*cost/size runs.
	if cost > size || nb*cost < 3*64*size {
		t.Fatalf("batches of %d bytes to sort, %d in all: want each within the budget %d, all past 3*64 of it", cost, nb*cost, size)
	}
	for _, fanIn := range []int{64, 4} {
		t.Run(fmt.Sprint("fan-in ", fanIn), func(t *testing.T) {
			defer func(prev int) { sortFanIn = prev }(sortFanIn)
			sortFanIn = fanIn
			b := newMemBudget(size)
			got, reading, writing := runOpen(t, mem, b, dir, src(), sort())
			// Levels of runs: one spilled from memory, one merged from
			// fanIn of those, and so on.
			levels := 1
			for n := fanIn; n <= nb; n *= fanIn {
				levels++
			}
			t.Logf("at least %d runs; at most %d open while reading (%d levels), %d while merging out", nb*cost/size, reading, levels, writing)
			if most := (fanIn-1)*levels + 1; reading > most {
				t.Errorf("%d runs open at once while the input was read: want at most %d, fewer than %d of each of %d levels", reading, most, fanIn, levels)
			}
			if writing > fanIn {
				t.Errorf("the last merge read %d runs at once: want at most %d", writing, fanIn)
			}
			if _, used, _ := b.stats(); used != 0 {
				t.Errorf("%d bytes still reserved after the sort", used)
			}
			if !bytes.Equal(got, want) {
				checkSorted(t, got, nb*100)
				t.Error("the rows differ from those sorted in memory")
			}
		})
	}
}

// TestSortMergeFanInFails: a sort that merges runs as they come, failing
// while it merges them out or cancelled while it reads its input, leaves
// no spill file open and nothing allocated or reserved.
func TestSortMergeFanInFails(t *testing.T) {
	defer func(prev int) { sortFanIn = prev }(sortFanIn)
	sortFanIn = 4
	mem := checkedMem(t)
	dir := t.TempDir()
	batches := sortBatches(t, 3, 101, 100, 20)
	b := newMemBudget(8 << 10)
	failed := errors.New("the sink failed")
	sent := 0
	sink := Collect(nil, func(arrow.RecordBatch) error {
		if sent++; sent == 1 && openIn(t, dir) == 0 {
			t.Error("no spill file open while the merged rows flowed")
		}
		return failed
	})
	err := Run(withBudget(context.Background(), b), Pipeline{Source: FromBatches(sortSchema, batches...), Stages: []Stage{Sort([]SortKey{{Column: "k"}}), sink}},
		Options{Open: testOpen, Mem: mem, Workers: 1, TempDir: dir})
	if !errors.Is(err, failed) {
		t.Fatalf("%v, want the sink's error", err)
	}
	if n := openIn(t, dir); n != 0 {
		t.Errorf("%d spill files still open", n)
	}
	if _, used, _ := b.stats(); used != 0 {
		t.Errorf("%d bytes still reserved", used)
	}

	// Cancelled while it reads its input, between merges.
	ctx, cancel := context.WithCancel(withBudget(context.Background(), b))
	defer cancel()
	read := 0
	src := &seeOpen{SourceStage: FromBatches(sortSchema, batches...), see: func() {
		if read++; read == 50 {
			if openIn(t, dir) < 2 {
				t.Error("fewer than 2 runs open after 49 batches")
			}
			cancel()
		}
	}}
	err = Run(ctx, Pipeline{Source: src, Stages: []Stage{Sort([]SortKey{{Column: "k"}}), Collect(nil, func(arrow.RecordBatch) error { return nil })}},
		Options{Open: testOpen, Mem: mem, Workers: 1, TempDir: dir})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
	if n := openIn(t, dir); n != 0 {
		t.Errorf("%d spill files still open after the cancelled run", n)
	}
	if _, used, _ := b.stats(); used != 0 {
		t.Errorf("%d bytes still reserved after the cancelled run", used)
	}
}
