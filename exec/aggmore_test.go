package exec

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// moreAggs lists every aggregate beyond sum, count, min, max and mean.
const moreAggs = "count(distinct n), count(DISTINCT s) as ds, approx_count_distinct(x), approx_count_distinct(s) as as_, " +
	"median(x), median(n) as mn, quantile(n, 0.25) as q, var_samp(x), variance(n) as vn, var_pop(x), " +
	"stddev(n), stddev_samp(x) as sx, stddev_pop(n), any_value(s), any_value(x) as ax, min(s), max(s)"

// sketchAggs are the quantiles that pick a value or estimate one.
const sketchAggs = "quantile_disc(n, 0.25) as qd, quantile_disc(x, 0.9) as qdx, approx_quantile(x, 0.9) as aq, approx_quantile(n, 0.5) as an"

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
	agg := mustStage(t)(AggBy([]string{"k"}, moreAggs+", "+sketchAggs))
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
		"quantile(x, 2)":          "quantile's fraction must be a number from 0 to 1, not 2",
		"quantile(x, n)":          "quantile's fraction must be a number from 0 to 1, not n",
		"quantile(x)":             "quantile takes a value and a fraction",
		"approx_quantile(x)":      "approx_quantile takes a value and a fraction",
		"quantile_disc(x, -1)":    "quantile_disc's fraction must be a number from 0 to 1",
		"approx_quantile(s, 0.5)": `cannot take the approx_quantile of column "s": it is a string`,
		"median(x, 0.5)":          "median takes one argument",
		"median(s)":               `cannot take the median of column "s": it is a string`,
		"stddev_pop(s)":           `cannot take the stddev_pop of column "s": it is a string`,
		"var_samp(s)":             `cannot take the var_samp of column "s": it is a string`,
		"any_value()":             "any_value needs an argument",
		"count(distinct x, n)":    "count(distinct) takes one argument",
		"count(distinct nope)":    `at position 16 of "count(distinct nope)": no column "nope"`,
		"approx_count_distinct":   "expected an aggregate",
		"mode(x)":                 "unknown aggregate mode (there are sum, count, count(distinct), approx_count_distinct",
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

// TestQuantileDiscAndApprox: quantile_disc picks the value DuckDB's does
// (the first whose cumulative share reaches q), and approx_quantile is
// within its 1% of the value at rank q*(n-1), over positive, negative
// and zero values; a group of nulls gets null.
func TestQuantileDiscAndApprox(t *testing.T) {
	mem := checkedMem(t)
	fracs := []float64{0, 0.1, 0.25, 0.5, 0.9, 0.99, 1}
	var items []string
	for i, q := range fracs {
		items = append(items, fmt.Sprintf("quantile_disc(x, %v) as d%d, approx_quantile(x, %v) as a%d", q, i, q, i))
	}
	agg := mustStage(t)(AggBy([]string{"k"}, strings.Join(items, ", ")))
	r := rand.New(rand.NewPCG(3, 4))
	groups := map[string][]float64{}
	var rows [][]any
	for _, g := range []string{"one", "small", "mixed", "wide"} {
		n := map[string]int{"one": 1, "small": 7, "mixed": 1000, "wide": 5000}[g]
		for range n {
			var x float64
			switch g {
			case "mixed":
				x = float64(r.IntN(201) - 100) // zeros and negatives
			case "wide":
				x = math.Exp(r.Float64()*30 - 5)
			default:
				x = float64(r.IntN(50))
			}
			groups[g] = append(groups[g], x)
			rows = append(rows, []any{g, 0, x, nil})
		}
	}
	rows = append(rows, []any{"none", 0, nil, nil})
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	b := batch(t, mem, moreSchema, rows...)
	defer b.Release()
	got, err := collectRows(t, mem, FromBatches(moreSchema, b), agg)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d groups, want 5: %q", len(got), got)
	}
	for _, row := range got {
		f := strings.Fields(row)
		vals, ok := groups[f[0]]
		if !ok {
			if strings.Count(row, "(null)") != 2*len(fracs) {
				t.Errorf("group %s: %s, want nulls", f[0], row)
			}
			continue
		}
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		n := len(sorted)
		for i, q := range fracs {
			disc, _ := strconv.ParseFloat(f[1+2*i], 64)
			approx, _ := strconv.ParseFloat(f[2+2*i], 64)
			// DuckDB: index max(1, n - floor(n - n*q)) - 1.
			if want := sorted[max(1, n-int(math.Floor(float64(n)-float64(n)*q)))-1]; disc != want {
				t.Errorf("group %s: quantile_disc(x, %v) = %v, want %v", f[0], q, disc, want)
			}
			exact := sorted[int(math.Floor(q*float64(n-1)))]
			if math.Abs(approx-exact) > 0.01*math.Abs(exact) {
				t.Errorf("group %s: approx_quantile(x, %v) = %v, not within 1%% of %v", f[0], q, approx, exact)
			}
		}
	}
}

// FuzzDecodeState: a partial's state column comes from another process's
// object; whatever its bytes, reading it is an error or a state, never a
// panic.
func FuzzDecodeState(f *testing.F) {
	mem := memory.NewGoAllocator()
	b := batch(f, mem, moreSchema, []any{"a", 1, 1.5, "q"}, []any{"a", 3, -2.0, "r"}, []any{"a", 0, 0.0, "q"})
	defer b.Release()
	agg := mustStage(f)(AggBy([]string{"k"}, moreAggs+", "+sketchAggs))
	partial, _, _ := splitAgg(agg)
	_, states := runCollect(f, mem, 1, FromBatches(moreSchema, b), partial)
	for _, rec := range states {
		for c, fld := range rec.Schema().Fields() {
			if fld.Type.ID() == arrow.BINARY {
				f.Add(uint8(c), rec.Column(c).(*array.Binary).Value(0))
			}
		}
		rec.Release()
	}
	bound, err := agg.(*aggStage).bind(&env{mem: mem}, moreSchema)
	if err != nil {
		f.Fatal(err)
	}
	aggs := bound.agg.(*hashAgg).aggs
	f.Fuzz(func(t *testing.T, which uint8, state []byte) {
		a := aggs[int(which)%len(aggs)]
		if !binaryState(a.fn) {
			return
		}
		var acc accum
		acc.grow(a, 1)
		_ = decodeState(a, &acc, 0, state)
	})
}
