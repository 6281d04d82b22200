package scan

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluice-data/sluice/gen"
)

func TestLineitemAllColumns(t *testing.T) {
	st, files := genStore(t, "lineitem", gen.Options{Rows: 50_000, Files: 3, Seed: 7, RowGroupRows: 8000})
	want := reference(t, files, nil, nil)
	got, stats := scanAll(t, st, "lineitem/", Options{Mem: checked(t), BatchRows: 3000})
	if got.String() != want.String() {
		t.Fatalf("scan:      %v\nreference: %v", got, want)
	}
	t.Logf("%v", stats)
}

func TestLineitemProjectionAndFilters(t *testing.T) {
	st, files := genStore(t, "lineitem", gen.Options{Rows: 60_000, Files: 3, Seed: 3, RowGroupRows: 5000})
	col := func(rec arrow.RecordBatch, name string) arrow.Array {
		return rec.Column(rec.Schema().FieldIndices(name)[0])
	}
	day := func(s string) arrow.Date32 {
		d, _ := time.Parse("2006-01-02", s)
		return arrow.Date32FromTime(d)
	}
	cases := []struct {
		name    string
		columns []string
		filter  string
		keep    func(arrow.RecordBatch, int) bool
		pruned  bool // some row groups must be skipped by statistics
	}{
		{name: "two columns", columns: []string{"l_shipmode", "l_extendedprice"}},
		{name: "one string column", columns: []string{"l_comment"}},
		{
			name:    "filter on projected and other columns",
			columns: []string{"l_orderkey", "l_quantity", "l_comment"},
			filter:  "l_quantity < 10 and l_shipdate >= '1995-01-01' and l_shipmode = 'AIR'",
			keep: func(r arrow.RecordBatch, i int) bool {
				return col(r, "l_quantity").(*array.Float64).Value(i) < 10 &&
					col(r, "l_shipdate").(*array.Date32).Value(i) >= day("1995-01-01") &&
					col(r, "l_shipmode").(*array.String).Value(i) == "AIR"
			},
		},
		{
			name:   "filter pruning by sorted keys",
			filter: "l_orderkey <= 20000 and 3 != l_linenumber",
			keep: func(r arrow.RecordBatch, i int) bool {
				return col(r, "l_orderkey").(*array.Int64).Value(i) <= 20000 && col(r, "l_linenumber").(*array.Int32).Value(i) != 3
			},
			pruned: true,
		},
		{
			name:    "filter matching nothing",
			columns: []string{"l_orderkey"},
			filter:  "l_orderkey < 0",
			keep:    func(arrow.RecordBatch, int) bool { return false },
			pruned:  true,
		},
		{
			name:    "fractional literal against an integer column",
			columns: []string{"l_linenumber"},
			filter:  "l_linenumber > 2.5",
			keep:    func(r arrow.RecordBatch, i int) bool { return col(r, "l_linenumber").(*array.Int32).Value(i) > 2 },
		},
		{name: "no columns", columns: []string{}},
		{
			name:    "no columns with a filter",
			columns: []string{},
			filter:  "l_quantity < 5",
			keep:    func(r arrow.RecordBatch, i int) bool { return col(r, "l_quantity").(*array.Float64).Value(i) < 5 },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := reference(t, files, c.columns, c.keep)
			got, stats := scanAll(t, st, "lineitem", Options{Mem: checked(t), Columns: c.columns, Filter: c.filter, BatchRows: 4096})
			if got.String() != want.String() {
				t.Fatalf("scan:      %v\nreference: %v", got, want)
			}
			if c.pruned != (stats.RowGroupsPruned > 0) {
				t.Errorf("%d row groups pruned", stats.RowGroupsPruned)
			}
			if stats.Fallbacks != 0 {
				t.Errorf("%d fallback reads", stats.Fallbacks)
			}
		})
	}
}

func TestTaxiFilterOnTimestamp(t *testing.T) {
	st, files := genStore(t, "taxi", gen.Options{Rows: 40_000, Files: 2, Seed: 5, RowGroupRows: 4000})
	limit := time.Date(2023, 3, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	keep := func(r arrow.RecordBatch, i int) bool {
		ts := r.Column(r.Schema().FieldIndices("pickup_datetime")[0]).(*array.Timestamp)
		pc := r.Column(r.Schema().FieldIndices("passenger_count")[0]).(*array.Int32)
		return pc.IsValid(i) && pc.Value(i) >= 2 && ts.IsValid(i) && int64(ts.Value(i)) < limit
	}
	want := reference(t, files, nil, keep)
	got, stats := scanAll(t, st, "taxi/", Options{Mem: checked(t), Filter: "passenger_count >= 2 and pickup_datetime < '2023-03-01'"})
	if got.String() != want.String() {
		t.Fatalf("scan:      %v\nreference: %v", got, want)
	}
	if stats.RowGroupsPruned == 0 {
		t.Errorf("no row group pruned by pickup time")
	}
	t.Logf("%v", stats)
}
