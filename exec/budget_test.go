package exec

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// runInBudget runs stages over src under b and returns the stream as IPC.
func runInBudget(t *testing.T, mem memory.Allocator, b *memBudget, dir string, src SourceStage, stages ...Stage) []byte {
	t.Helper()
	var out bytes.Buffer
	var w *ipc.Writer
	sink := Collect(func(s *arrow.Schema) { w = ipc.NewWriter(&out, ipc.WithSchema(s)) }, func(rec arrow.RecordBatch) error {
		return w.Write(rec)
	})
	err := Run(withBudget(context.Background(), b), Pipeline{Source: src, Stages: append(stages, sink)},
		Options{Open: testOpen, Mem: mem, Workers: 2, TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestOneBudget: an aggregation inside a join's right side, two joins
// (their sides read by Runs of their own), an aggregation and a sort
// share one budget: together they never reserve more than it, and the
// rows are those of the same pipeline with room for everything. (No
// float sum after a join: a join that spills hands on its rows, in the
// same order, cut into other batches, and a sum of floats is summed per
// batch first.)
func TestOneBudget(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	// The sides fit in half the budget each, as a join's side did on its
	// own, and the aggregation after them needs many times it.
	left := manyGroups(t, 21, 40, 1000, 2000)
	sideA := manyGroups(t, 22, 10, 1000, 2000)
	sideB := moreRows(t, 23, 2, 2, 1000, func(r *rand.Rand) []any {
		return []any{fmt.Sprint("b", r.IntN(1000)), r.IntN(2000), r.Float64(), fmt.Sprintf("%040d", r.IntN(1e9))}
	})
	stages := func() []Stage {
		aggA := mustStage(t)(AggBy([]string{"n"}, "sum(x) as ax, count() as ac"))
		renB := Rename([2]string{"k", "bk"}, [2]string{"x", "bx"}, [2]string{"s", "bs"})
		return []Stage{
			Join(Pipeline{Source: FromBatches(moreSchema, sideA...), Stages: []Stage{aggA}}, JoinOptions{How: "inner", Left: []string{"n"}, Right: []string{"n"}}),
			Join(Pipeline{Source: FromBatches(moreSchema, sideB...), Stages: []Stage{renB}}, JoinOptions{How: "left", Left: []string{"n"}, Right: []string{"n"}}),
			mustStage(t)(AggBy([]string{"k", "n", "s", "bk"}, "sum(n) as sn, min(x) as lx, max(ax) as mx, max(bx) as sb, min(bs) as lo")),
			Sort([]SortKey{{Column: "sb", Desc: true}, {Column: "k"}, {Column: "n"}, {Column: "s"}, {Column: "bk"}}),
		}
	}
	src := func() SourceStage { return FromBatches(moreSchema, left...) }

	roomy := newMemBudget(1 << 30)
	want := runInBudget(t, mem, roomy, dir, src(), stages()...)
	_, used, needed := roomy.stats()
	if used != 0 {
		t.Fatalf("%d bytes still reserved after the run with room", used)
	}
	if len(table(t, want)) < 10000 {
		t.Fatal("want many rows")
	}

	const size = 1 << 20
	if needed < 4*size {
		t.Fatalf("the run held %d bytes at most with room: want it well past the budget %d", needed, size)
	}
	b := newMemBudget(size)
	got := runInBudget(t, mem, b, dir, src(), stages()...)
	_, used, peak := b.stats()
	t.Logf("reserved at most %d bytes with room, %d within a budget of %d", needed, peak, size)
	if peak > size {
		t.Errorf("the run reserved %d bytes at once, past its budget of %d", peak, size)
	}
	if used != 0 {
		t.Errorf("%d bytes still reserved after the run", used)
	}
	if !bytes.Equal(got, want) {
		g, w := table(t, got), table(t, want)
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("row %d:\n%s\n%s", i, g[i], w[i])
			}
		}
		t.Errorf("within %d bytes the rows differ from those with room (%d rows, want %d)", size, len(table(t, got)), len(table(t, want)))
	}
	if left, _ := readDirNames(dir); len(left) != 0 {
		t.Fatalf("spill files left behind: %v", left)
	}
}
