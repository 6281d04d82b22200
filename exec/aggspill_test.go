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

// manyGroups is batches of rows over about groups keys, each column a
// tenth null.
func manyGroups(t *testing.T, seed uint64, batches, rows, groups int) []arrow.RecordBatch {
	return moreRows(t, seed, 2, batches, rows, func(r *rand.Rand) []any {
		g := r.IntN(groups)
		return []any{fmt.Sprint("k", g%97), g, r.NormFloat64()*1e3 + 1e6, fmt.Sprint("s", r.IntN(5000))}
	})
}

// runBudget runs stages over src within memory bytes, spilling to dir,
// and returns the stream as IPC and the most spill files open while the
// result flowed out.
func runBudget(t *testing.T, mem memory.Allocator, memory int64, dir string, src SourceStage, stages ...Stage) ([]byte, int) {
	t.Helper()
	var out bytes.Buffer
	var w *ipc.Writer
	open := 0
	sink := Collect(func(s *arrow.Schema) { w = ipc.NewWriter(&out, ipc.WithSchema(s)) }, func(rec arrow.RecordBatch) error {
		open = max(open, openIn(t, dir))
		return w.Write(rec)
	})
	err := Run(context.Background(), Pipeline{Source: src, Stages: append(stages, sink)},
		Options{Open: testOpen, Mem: mem, Workers: 2, Memory: memory, TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), open
}

// TestAggSpills: an aggregation over more groups than its budget holds
// spills them by partition and gives the stream it gives in memory, byte
// for byte (float sums, quantiles' values and distinct sets included),
// fused and as the final half of a split aggregation; it leaves no file.
func TestAggSpills(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	recs := manyGroups(t, 11, 40, 1000, 20000)
	aggs := "sum(x), sum(n) as sn, count(), count(x) as cx, mean(x) as mx, min(x) as lo, max(s) as hi, " + moreAggs + ", " + sketchAggs
	for _, keys := range [][]string{{"n"}, {"k", "n"}} {
		t.Run(fmt.Sprint(keys), func(t *testing.T) {
			agg := mustStage(t)(AggBy(keys, aggs))
			src := func() SourceStage { return FromBatches(moreSchema, recs...) }
			want, open := runBudget(t, mem, 1<<30, dir, src(), agg)
			if open != 0 {
				t.Fatalf("an aggregation within its budget held %d spill files", open)
			}
			groups := len(table(t, want))
			if groups < 15000 {
				t.Fatalf("%d groups, want many", groups)
			}
			// 256 KiB holds a few thousand groups: partitions are cut
			// again, down to the deepest level.
			for _, budget := range []int64{4 << 20, 256 << 10} {
				got, open := runBudget(t, mem, budget, dir, src(), agg)
				if open == 0 {
					t.Errorf("budget %d: no spill file open while the result flowed", budget)
				}
				if !bytes.Equal(got, want) {
					g, w := table(t, got), table(t, want)
					for i := range min(len(g), len(w)) {
						if g[i] != w[i] {
							t.Fatalf("budget %d: spilled differs from in memory at row %d of %d:\n%s\n%s", budget, i, len(w), g[i], w[i])
						}
					}
					t.Fatalf("budget %d: spilled differs from in memory, in its bytes only (%d rows)", budget, len(w))
				}
			}
			partial, final, ok := splitAgg(agg)
			if !ok {
				t.Fatal("splitAgg refused agg-by")
			}
			schema, states := runCollect(t, mem, 2, src(), partial)
			defer releaseAll(states)
			if got, _ := runBudget(t, mem, 256<<10, dir, FromBatches(schema, states...), final); !bytes.Equal(got, want) {
				t.Fatal("the final half of a split aggregation, spilled, differs from one process in memory")
			}
			if open := openIn(t, dir); open != 0 {
				t.Fatalf("%d spill files open after the runs", open)
			}
			if left, _ := readDirNames(dir); len(left) != 0 {
				t.Fatalf("spill files left behind: %v", left)
			}
		})
	}
}
