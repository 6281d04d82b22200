package exec

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/plan"
)

// exactRows prints every row with floats in hexadecimal, so equal text is
// equal bits.
func exactRows(t *testing.T, recs []arrow.RecordBatch) []string {
	t.Helper()
	var rows []string
	for _, rec := range recs {
		rows = append(rows, arrowtest.ExactRows(rec)...)
	}
	return rows
}

// runCollect runs src | stages and keeps every batch it ends with.
func runCollect(t testing.TB, mem memory.Allocator, workers int, src SourceStage, stages ...Stage) (*arrow.Schema, []arrow.RecordBatch) {
	t.Helper()
	var schema *arrow.Schema
	var out []arrow.RecordBatch
	sink := Collect(func(s *arrow.Schema) { schema = s }, func(rec arrow.RecordBatch) error {
		rec.Retain()
		out = append(out, rec)
		return nil
	})
	err := Run(context.Background(), Pipeline{Source: src, Stages: append(stages, sink)}, Options{Open: testOpen, Mem: mem, Workers: workers})
	if err != nil {
		releaseAll(out)
		t.Fatalf("%v: %v", stages, err)
	}
	t.Cleanup(func() { releaseAll(out) })
	return schema, out
}

// The summaries of a split aggregation, folded elsewhere in batch order,
// give the stream the aggregation gives, byte for byte, whichever way the
// summaries are grouped into inputs.
func TestSplitAggIsBitIdentical(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	scanOpts := ScanOptions{BatchRows: 700, Dict: []string{"l_returnflag", "l_linestatus"}}
	must := mustStage(t)
	filter := must(Filter("l_shipdate <= date '1998-09-02'"))
	aggs := []Stage{
		must(AggBy([]string{"l_returnflag", "l_linestatus"}, "sum(l_quantity), sum(l_extendedprice * (1 - l_discount)) as disc, "+
			"mean(l_discount), count(), min(l_shipdate), max(l_comment), min(l_orderkey), mean(l_orderkey)")),
		SumBy([]string{"l_suppkey"}, []string{"l_extendedprice"}),
		CountBy([]string{"l_shipmode"}),
	}
	for _, agg := range aggs {
		want := fused(t, mem, 3, Scan([]string{lineitem}, scanOpts), filter, agg)
		partial, final, ok := splitAgg(agg)
		if !ok {
			t.Fatal("splitAgg refused an aggregation")
		}
		schema, states := runCollect(t, mem, 3, Scan([]string{lineitem}, scanOpts), filter, partial)
		if len(states) < 10 {
			t.Fatalf("%d summaries: want one per batch", len(states))
		}
		// Three inputs of different lengths, read in turn.
		a, b := len(states)/5, len(states)/2
		src := Concat(FromBatches(schema, states[:a]...), FromBatches(schema, states[a:b]...), FromBatches(schema, states[b:]...))
		got := fused(t, mem, 2, src, final)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: split result differs:\n got %q\nwant %q", agg.Name(), table(t, got)[:3], table(t, want)[:3])
		}
	}
	if _, _, ok := splitAgg(Head(3)); ok {
		t.Error("splitAgg split head")
	}
}

// Reducers that each aggregate one part of every batch, in batch order,
// give every group the bits the aggregation of the whole stream gives,
// though the same sums folded in another order do not.
func TestSplitterReducersAreBitIdentical(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	schema, recs := runCollect(t, mem, 2, Scan([]string{lineitem}, ScanOptions{BatchRows: 500, Columns: []string{"l_orderkey", "l_suppkey", "l_extendedprice"}}))
	agg := SumBy([]string{"l_suppkey"}, []string{"l_extendedprice"})
	_, whole := runCollect(t, mem, 2, FromBatches(schema, recs...), agg)
	want := exactRows(t, whole)

	const parts = 4
	sp, err := NewSplitter(schema, []string{"l_suppkey"}, parts, mem)
	if err != nil {
		t.Fatal(err)
	}
	byPart := make([][]arrow.RecordBatch, parts)
	rows := 0
	for _, rec := range recs {
		split, err := sp.Split(context.Background(), rec)
		if err != nil {
			t.Fatal(err)
		}
		for p, b := range split {
			if b != nil {
				byPart[p] = append(byPart[p], b)
				rows += int(b.NumRows())
			}
		}
	}
	defer func() {
		for _, bs := range byPart {
			releaseAll(bs)
		}
	}()
	var got []string
	for p := range parts {
		if len(byPart[p]) == 0 {
			t.Fatalf("part %d is empty", p)
		}
		_, out := runCollect(t, mem, 2, FromBatches(schema, byPart[p]...), agg)
		got = append(got, exactRows(t, out)...)
	}
	total := 0
	for _, r := range recs {
		total += int(r.NumRows())
	}
	if rows != total {
		t.Fatalf("the parts hold %d rows, the batches %d", rows, total)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("reducers' groups differ from the whole aggregation's")
	}

	// The comparison above can fail: the same batches in reverse order
	// change the bits of some sum.
	rev := slices.Clone(recs)
	slices.Reverse(rev)
	_, other := runCollect(t, mem, 2, FromBatches(schema, rev...), agg)
	diff := exactRows(t, other)
	slices.Sort(diff)
	if slices.Equal(diff, want) {
		t.Fatal("folding in reverse order gave the same bits: the data cannot tell fold orders apart")
	}
}

// Scans of pieces (row group ranges of files), read one after another,
// give the batches of the whole scan.
func TestScanPiecesConcatenated(t *testing.T) {
	taxi, _ := testData(t)
	mem := checkedMem(t)
	opts := ScanOptions{BatchRows: 1500, Columns: []string{"pickup_date", "trip_distance"}}
	src := Scan([]string{taxi}, opts)
	want := fused(t, mem, 2, src)

	urls := []string{taxi}
	keys := []string{"taxi/part-00000.parquet", "taxi/part-00001.parquet", "taxi/part-00002.parquet"}
	piece := func(key string, lo, hi int) SourceStage {
		o := opts
		o.RowGroups = func(k string, rg int) bool { return k == key && rg >= lo && rg < hi }
		return Scan(urls, o)
	}
	pieces := Concat(piece(keys[0], 0, 1), piece(keys[0], 1, 100), piece(keys[1], 0, 100), piece(keys[2], 0, 2), piece(keys[2], 2, 100))
	if got := fused(t, mem, 2, pieces); !bytes.Equal(got, want) {
		t.Fatalf("pieces give %d rows, the whole scan %d", len(table(t, got)), len(table(t, want)))
	}
}

func TestKinds(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.PrimitiveTypes.Float64}}, nil)
	must := mustStage(t)
	stages := []Stage{Select("k", "v"), Shuffle([]string{"k"}, 4), must(Filter("v > 1")), SumBy([]string{"k"}, []string{"v"}), Top(3, []SortKey{{Column: "v"}}), Show(&bytes.Buffer{}, 10)}
	got, err := kinds(schema, stages, Options{Open: testOpen})
	if err != nil {
		t.Fatal(err)
	}
	want := []stageKind{kindPerBatch, kindPerBatch, kindPerBatch, kindAggregate, kindOrdered, kindSink}
	if !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	if _, err := kinds(schema, []Stage{Shuffle([]string{"nope"}, 4)}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("shuffle by a missing column: %v", err)
	}
	if _, err := kinds(schema, []Stage{Shuffle([]string{"k"}, 0)}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("shuffle to 0 parts: %v", err)
	}
	if _, err := kinds(schema, []Stage{Show(&bytes.Buffer{}, 1), Head(1)}, Options{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a stage after a sink: %v", err)
	}
}

// In one process a shuffle hands batches on untouched.
func TestShuffleInOneProcess(t *testing.T) {
	taxi, _ := testData(t)
	mem := checkedMem(t)
	opts := ScanOptions{Columns: []string{"pickup_date", "trip_distance"}}
	agg := SumBy([]string{"pickup_date"}, []string{"trip_distance"})
	want := fused(t, mem, 2, Scan([]string{taxi}, opts), agg)
	got := fused(t, mem, 2, Scan([]string{taxi}, opts), Shuffle([]string{"pickup_date"}, 8), agg)
	if !bytes.Equal(got, want) {
		t.Fatalf("shuffle changed the result: %d rows, want %d", len(table(t, got)), len(table(t, want)))
	}
}

// Head and top over consecutive pieces, then again over their outputs in
// order, give what they give over the whole stream, ties included.
func TestDistributiveStages(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	schema, recs := runCollect(t, mem, 2, Scan([]string{lineitem}, ScanOptions{BatchRows: 800, Columns: []string{"l_orderkey", "l_quantity", "l_shipmode"}}))
	nodes := []plan.Stage{
		&plan.Top{N: 500, Keys: []plan.SortKey{{Column: "l_quantity", Desc: true}}}, // 50 values: ties everywhere
		&plan.Top{N: 300, Keys: []plan.SortKey{{Column: "l_shipmode"}, {Column: "l_quantity"}}},
		&plan.Head{N: 5000},
		&plan.Distinct{On: []string{"l_quantity"}},
		&plan.Distinct{On: []string{"l_shipmode", "l_quantity"}},
		&plan.Distinct{},
	}
	for _, node := range nodes {
		if !plan.Distributive(node) {
			t.Fatalf("%s is not distributive", node.Name())
		}
		st, err := CompileStage(node, Env{})
		if err != nil {
			t.Fatal(err)
		}
		want := fused(t, mem, 2, FromBatches(schema, recs...), st)
		var outs []arrow.RecordBatch
		for _, piece := range [][]arrow.RecordBatch{recs[:3], recs[3:17], recs[17:18], recs[18:]} {
			_, out := runCollect(t, mem, 2, FromBatches(schema, piece...), st)
			outs = append(outs, out...)
		}
		if got := fused(t, mem, 2, FromBatches(schema, outs...), st); !bytes.Equal(got, want) {
			t.Errorf("%s over pieces differs from %s over the whole", st.Name(), st.Name())
		}
	}
	if plan.Distributive(&plan.SumBy{}) || plan.Distributive(&plan.Sort{}) {
		t.Error("an aggregation or a sort called distributive")
	}
}
