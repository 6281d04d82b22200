package exec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// moreAggs lists every aggregate beyond sum, count, min, max and mean.
const moreAggs = "count(distinct n), count(DISTINCT s) as ds, approx_count_distinct(x), approx_count_distinct(s) as as_, " +
	"median(x), median(n) as mn, quantile(n, 0.25) as q, var_samp(x), variance(n) as vn, var_pop(x), " +
	"stddev(n), stddev_samp(x) as sx, stddev_pop(n), any_value(s), any_value(x) as ax, min(s), max(s)"

var moreSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// TestMoreAggregatesAndNulls checks each aggregate by hand over groups
// with nulls, one value, and no values at all (c).
func TestMoreAggregatesAndNulls(t *testing.T) {
	mem := checkedMem(t)
	b1 := batch(t, mem, moreSchema, []any{"a", 1, 1.5, "q"}, []any{"b", 2, nil, nil}, []any{nil, 3, 2.0, nil}, []any{"a", nil, 0.5, "p"}, []any{"a", 1, 0.5, "q"})
	defer b1.Release()
	b2 := batch(t, mem, moreSchema, []any{"b", 10, 4.0, "z"}, []any{nil, 5, nil, nil}, []any{"c", nil, nil, nil})
	defer b2.Release()
	agg := mustStage(t)(AggBy([]string{"k"}, moreAggs))
	rows, err := collectRows(t, mem, FromBatches(moreSchema, b1, b2), agg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		// cd ds acd acds med mn q vs vn vp sd sx sp any ax min max
		"a 1 2 2 2 0.5 1 1 0.33333333333333337 0 0.22222222222222224 0 0.5773502691896258 0 q 1.5 p q", // Welford's rounding, as DuckDB's,
		"b 2 1 1 1 4 6 4 (null) 32 0 5.656854249492381 (null) 4 z 4 z z",
		"c 0 0 0 0 (null) (null) (null) (null) (null) (null) (null) (null) (null) (null) (null) (null) (null)",
		"(null) 2 0 1 0 2 4 3.5 (null) 2 0 1.4142135623730951 (null) 1 (null) 2 (null) (null)",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	// No rows: no groups, and nothing leaks.
	rows, err = collectRows(t, mem, FromBatches(moreSchema), agg)
	if err != nil || len(rows) != 0 {
		t.Fatalf("no input: %v, %v", rows, err)
	}
}

// randomMore is n batches of rows over few groups, a tenth of each
// column null.
func randomMore(t *testing.T, seed uint64, batches, rows int) []arrow.RecordBatch {
	return moreRows(t, seed, 1, batches, rows, func(r *rand.Rand) []any {
		return []any{fmt.Sprint("k", r.IntN(7)), r.IntN(300) - 100, r.NormFloat64()*1e3 + 1e6, fmt.Sprint("s", r.IntN(5000))}
	})
}

// moreRows is batches of rows of moreSchema made by row from a source
// seeded by seed and stream, a tenth of each column then made null.
func moreRows(t *testing.T, seed, stream uint64, batches, rows int, row func(*rand.Rand) []any) []arrow.RecordBatch {
	mem := checkedMem(t)
	r := rand.New(rand.NewPCG(seed, stream))
	var out []arrow.RecordBatch
	for range batches {
		var rs [][]any
		for range rows {
			vals := row(r)
			for c := range vals {
				if r.IntN(10) == 0 {
					vals[c] = nil
				}
			}
			rs = append(rs, vals)
		}
		out = append(out, batch(t, mem, moreSchema, rs...))
	}
	t.Cleanup(func() { releaseAll(out) })
	return out
}

// TestMoreAggsSameEveryWay: fused on one or four workers, piped, and
// split into partials folded from three inputs, every new aggregate
// gives the same stream, byte for byte (the sketch past its sparse
// size, the values of quantiles and the distinct sets included).
func TestMoreAggsSameEveryWay(t *testing.T) {
	mem := checkedMem(t)
	recs := randomMore(t, 7, 30, 500)
	agg := mustStage(t)(AggBy([]string{"k"}, moreAggs))
	want := fused(t, mem, 1, FromBatches(moreSchema, recs...), agg)
	if got := fused(t, mem, 4, FromBatches(moreSchema, recs...), agg); !bytes.Equal(got, want) {
		t.Errorf("4 workers differ:\n%q\n%q", table(t, got), table(t, want))
	}
	if got := piped(t, mem, FromBatches(moreSchema, recs...), agg); !bytes.Equal(got, want) {
		t.Errorf("piped differs:\n%q\n%q", table(t, got), table(t, want))
	}
	partial, final, ok := splitAgg(agg)
	if !ok {
		t.Fatal("splitAgg refused agg-by")
	}
	schema, states := runCollect(t, mem, 3, FromBatches(moreSchema, recs...), partial)
	a, b := len(states)/5, len(states)/2
	src := Concat(FromBatches(schema, states[:a]...), FromBatches(schema, states[a:b]...), FromBatches(schema, states[b:]...))
	if got := fused(t, mem, 2, src, final); !bytes.Equal(got, want) {
		t.Errorf("split differs:\n%q\n%q", table(t, got), table(t, want))
	}
	if len(table(t, want)) != 8 {
		t.Errorf("%d groups, want 8", len(table(t, want)))
	}
}

// TestMoreAggErrors: each mistake is one line naming the stage and the
// aggregate as written.
func TestMoreAggErrors(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, moreSchema, []any{"a", 1, 1.5, "q"})
	defer b.Release()
	for text, want := range map[string]string{
		"quantile(x, 2)":        "quantile's fraction must be a number from 0 to 1, not 2",
		"quantile(x, n)":        "quantile's fraction must be a number from 0 to 1, not n",
		"quantile(x)":           "quantile takes a value and a fraction",
		"median(x, 0.5)":        "median takes one argument",
		"median(s)":             `cannot take the median of column "s": it is a string`,
		"stddev_pop(s)":         `cannot take the stddev_pop of column "s": it is a string`,
		"var_samp(s)":           `cannot take the var_samp of column "s": it is a string`,
		"any_value()":           "any_value needs an argument",
		"count(distinct x, n)":  "count(distinct) takes one argument",
		"count(distinct nope)":  `at position 16 of "count(distinct nope)": no column "nope"`,
		"approx_count_distinct": "expected an aggregate",
		"mode(x)":               "unknown aggregate mode (there are sum, count, count(distinct), approx_count_distinct",
	} {
		agg, err := AggBy([]string{"k"}, text)
		if err == nil {
			_, err = collectRows(t, mem, FromBatches(moreSchema, b), agg)
		}
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "agg-by: ") {
			t.Errorf("%s: %v, want one line with %q", text, err, want)
		}
	}
	// A default name of count(distinct) over an expression reads as written.
	agg := mustStage(t)(AggBy([]string{"k"}, "count(DISTINCT n + 1)"))
	schema, _ := runCollect(t, mem, 1, FromBatches(moreSchema, b), agg)
	if name := schema.Field(1).Name; name != "count(distinct n + 1)" {
		t.Errorf("named %q", name)
	}
}
