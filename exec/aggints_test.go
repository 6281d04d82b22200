package exec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestAggIntKeys: grouped by one integer column, batches without nulls
// in it keep their groups' keys as integers (aggPartial.ints) and
// batches with nulls as key bytes, into one fold. Counts and integer sums
// equal the definition, kept in Go maps; the stream is the same byte for
// byte on one worker and three, spilled under a small budget, and as the
// final half of a split aggregation.
func TestAggIntKeys(t *testing.T) {
	mem := checkedMem(t)
	r := rand.New(rand.NewPCG(3, 5))
	count, sum := map[string]int{}, map[string]int{}
	var recs []arrow.RecordBatch
	for b := range 30 {
		var rows [][]any
		for range 700 {
			var k any = r.IntN(20000) - 10000
			if b%4 == 3 && r.IntN(50) == 0 {
				k = nil // a batch with a null key is grouped by key bytes
			}
			n := r.IntN(1000)
			// n is the key; x the value, exact in eighths
			rows = append(rows, []any{"a", k, float64(n) / 8, "s"})
			key := "(null)"
			if k != nil {
				key = fmt.Sprint(k)
			}
			count[key]++
			sum[key] += n
		}
		recs = append(recs, batch(t, mem, moreSchema, rows...))
	}
	defer releaseAll(recs)
	agg := mustStage(t)(AggBy([]string{"n"}, "count() as c, sum(x) as sx, mean(x) as mx, min(x) as lo, max(x) as hi"))
	src := func() SourceStage { return FromBatches(moreSchema, recs...) }
	want := fused(t, mem, 1, src(), agg)
	rows := table(t, want)
	if len(rows) != len(count) {
		t.Fatalf("%d groups, want %d", len(rows), len(count))
	}
	for _, row := range rows {
		f := strings.Split(row, "|")
		c, err1 := strconv.Atoi(f[1])
		sx, err2 := strconv.ParseFloat(f[2], 64)
		if err1 != nil || err2 != nil || c != count[f[0]] || sx*8 != float64(sum[f[0]]) {
			t.Fatalf("group %s: %q; want count %d, sum %v", f[0], row, count[f[0]], float64(sum[f[0]])/8)
		}
	}
	sameEveryWay(t, mem, src, agg, want)
}

// TestAggPairKeys is TestAggIntKeys for two key columns of integers of
// different widths (pairGroupRows), a batch in four with nulls in one.
func TestAggPairKeys(t *testing.T) {
	mem := checkedMem(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	r := rand.New(rand.NewPCG(4, 6))
	count, sum := map[string]int{}, map[string]int{}
	var recs []arrow.RecordBatch
	for b := range 30 {
		var rows [][]any
		for range 700 {
			var ka, kb any = r.IntN(150) - 75, r.IntN(100) * 1000
			if b%4 == 3 && r.IntN(50) == 0 {
				kb = nil
			}
			n := r.IntN(1000)
			rows = append(rows, []any{ka, kb, float64(n) / 8})
			key := fmt.Sprint(ka) + "|(null)"
			if kb != nil {
				key = fmt.Sprint(ka, "|", kb)
			}
			count[key]++
			sum[key] += n
		}
		recs = append(recs, batch(t, mem, schema, rows...))
	}
	defer releaseAll(recs)
	agg := mustStage(t)(AggBy([]string{"a", "b"}, "count() as c, sum(x) as sx"))
	src := func() SourceStage { return FromBatches(schema, recs...) }
	want := fused(t, mem, 1, src(), agg)
	rows := table(t, want)
	if len(rows) != len(count) || len(rows) < 5000 {
		t.Fatalf("%d groups, want %d (and many)", len(rows), len(count))
	}
	for _, row := range rows {
		f := strings.Split(row, "|")
		key := f[0] + "|" + f[1]
		c, err1 := strconv.Atoi(f[2])
		sx, err2 := strconv.ParseFloat(f[3], 64)
		if err1 != nil || err2 != nil || c != count[key] || sx*8 != float64(sum[key]) {
			t.Fatalf("group %s: %q; want count %d, sum %v", key, row, count[key], float64(sum[key])/8)
		}
	}
	sameEveryWay(t, mem, src, agg, want)
}

// sameEveryWay checks that agg over src gives want, its stream on one
// worker, on three, spilled under a small budget, and as the final half
// of a split aggregation.
func sameEveryWay(t *testing.T, mem memory.Allocator, src func() SourceStage, agg Stage, want []byte) {
	t.Helper()
	if got := fused(t, mem, 3, src(), agg); !bytes.Equal(got, want) {
		t.Fatal("three workers differ from one")
	}
	dir := t.TempDir()
	inMem, _ := runBudget(t, mem, 1<<30, dir, src(), agg)
	spilled, open := runBudget(t, mem, 256<<10, dir, src(), agg)
	if open == 0 || !bytes.Equal(spilled, inMem) {
		t.Fatalf("spilled (%d files open) differs from in memory", open)
	}
	partial, final, ok := splitAgg(agg)
	if !ok {
		t.Fatal("splitAgg refused agg-by")
	}
	schema, states := runCollect(t, mem, 2, src(), partial)
	defer releaseAll(states)
	if got, _ := runBudget(t, mem, 1<<30, dir, FromBatches(schema, states...), final); !bytes.Equal(got, inMem) {
		t.Fatal("a split aggregation differs from one process")
	}
}
