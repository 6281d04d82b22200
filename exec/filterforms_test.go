package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// formsRows is the table both filter forms read: row i has id i, x i/10
// (null when i%10 == 3), s one of a, bb, ccc, dd (null when i%7 == 0),
// d 1998-09-01 plus i/10 days, ts 2020-01-01 plus i hours, flag i%2 == 0.
// Sorted by id and d, in row groups of 10 rows.
const formsRows = 100

var formsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
}, nil)

type formsRow struct {
	id   int
	x    float64
	xOK  bool
	s    string
	sOK  bool
	d    time.Time
	ts   time.Time
	flag bool
}

func formsRowOf(i int) formsRow {
	day0 := time.Date(1998, 9, 1, 0, 0, 0, 0, time.UTC)
	return formsRow{id: i, x: float64(i) / 10, xOK: i%10 != 3, s: []string{"a", "bb", "ccc", "dd"}[i%4], sOK: i%7 != 0,
		d: day0.AddDate(0, 0, i/10), ts: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour), flag: i%2 == 0}
}

// writeForms puts the table in st as one Parquet file with statistics.
func writeForms(t *testing.T, st *store.Store, key string) {
	t.Helper()
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, formsSchema)
	defer b.Release()
	for i := range formsRows {
		r := formsRowOf(i)
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if r.xOK {
			b.Field(1).(*array.Float64Builder).Append(r.x)
		} else {
			b.Field(1).AppendNull()
		}
		if r.sOK {
			b.Field(2).(*array.StringBuilder).Append(r.s)
		} else {
			b.Field(2).AppendNull()
		}
		b.Field(3).(*array.Date32Builder).Append(arrow.Date32FromTime(r.d))
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts.UnixMicro()))
		b.Field(5).(*array.BooleanBuilder).Append(r.flag)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := arrowtest.Parquet(t, rec, parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(10), parquet.WithStats(true)))
	if _, err := st.Put(context.Background(), key, bytes.NewReader(data), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// filterCases is the one table of expressions both filter forms run:
// each with the rows it keeps, as a Go predicate over the row's values
// (nil for an expression both forms must refuse as a mistake).
var filterCases = []struct {
	expr string
	keep func(r formsRow) bool
}{
	{"id < 10 or id >= 90", func(r formsRow) bool { return r.id < 10 || r.id >= 90 }},
	{"d <= '1998-09-02'", func(r formsRow) bool { return r.id < 20 }},
	{"d <= date '1998-09-02'", func(r formsRow) bool { return r.id < 20 }},
	{"'1998-09-05' < d", func(r formsRow) bool { return r.id >= 50 }},
	{"d between '1998-09-03' and '1998-09-04'", func(r formsRow) bool { return r.id >= 20 && r.id < 40 }},
	{"d >= date '1998-09-01' + interval '9' day", func(r formsRow) bool { return r.id >= 90 }},
	{"ts >= '2020-01-04' and ts < timestamp '2020-01-04 06:00:00'", func(r formsRow) bool { return r.id >= 72 && r.id < 78 }},
	{"ts < d", func(r formsRow) bool { return false }},
	{"x > 5 and s = 'bb'", func(r formsRow) bool { return r.xOK && r.x > 5 && r.sOK && r.s == "bb" }},
	{"x is null", func(r formsRow) bool { return !r.xOK }},
	{"s is not null and not flag", func(r formsRow) bool { return r.sOK && !r.flag }},
	{"s in ('a', 'dd') and id in (1, 3, 4, 8, 99)", func(r formsRow) bool {
		return r.sOK && (r.s == "a" || r.s == "dd") && (r.id == 4 || r.id == 8 || r.id == 3 || r.id == 99)
	}},
	{"s not in ('a', 'dd')", func(r formsRow) bool { return r.sOK && r.s != "a" && r.s != "dd" }},
	{"s like 'c%' or s like '_b'", func(r formsRow) bool { return r.sOK && (r.s == "ccc" || r.s == "bb") }},
	{"not (x < 9) or x is null", func(r formsRow) bool { return !r.xOK || r.x >= 9 }},
	{"id % 10 = 3 and x = 0.3", func(r formsRow) bool { return false }}, // x is null there
	{"flag = true and id * 2 >= 190", func(r formsRow) bool { return r.flag && r.id >= 95 }},
	{"abs(x - 5) <= 0.25", func(r formsRow) bool { return r.xOK && r.x >= 4.75 && r.x <= 5.25 }},
	{"starts_with(s, 'c') and d - date '1998-09-01' = 2", func(r formsRow) bool { return r.sOK && r.s == "ccc" && r.id/10 == 2 }},
	{"s = 1", nil},
	{"d < 'yesterday'", nil},
	{"nope = 1", nil},
	{"id +", nil},
	{"id", nil},
}

// TestFilterCasesFile: testdata/filters.txt, which the DuckDB check in
// bench/pipeline/duckdb reads, lists exactly the accepted expressions
// of filterCases, in order.
func TestFilterCasesFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "filters.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			got = append(got, l)
		}
	}
	for _, c := range filterCases {
		if c.keep != nil {
			want = append(want, c.expr)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("testdata/filters.txt lists\n%s\nwant the accepted expressions of filterCases:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestFilterFormsAgree runs every expression of one table through both
// forms, scan's filter and the filter stage after a scan: the same rows,
// the ones the table says, and the same row groups read.
func TestFilterFormsAgree(t *testing.T) {
	st := store.New(store.NewMemDriver(), "mem://forms/")
	writeForms(t, st, "t/part-0.parquet")
	url := "mem://forms/t/"
	open := func(ctx context.Context, u string) (*store.Store, string, error) {
		return st, strings.TrimPrefix(u, "mem://forms/"), nil
	}
	mem := checkedMem(t)
	pruned := map[string]int{}
	for _, c := range filterCases {
		var statsScan, statsStage scan.Stats
		inScan, errScan := collectRows(t, mem, Scan([]string{url}, ScanOptions{Filter: c.expr, Open: open, Stats: func(_ string, s scan.Stats) { statsScan = s }}))
		var inStage []string
		f, errStage := Filter(c.expr)
		if errStage == nil {
			inStage, errStage = collectRows(t, mem, Scan([]string{url}, ScanOptions{Open: open, Stats: func(_ string, s scan.Stats) { statsStage = s }}), f)
		}
		if c.keep == nil {
			if !errors.Is(errScan, ErrInvalid) || !errors.Is(errStage, ErrInvalid) {
				t.Errorf("%s: scan form %v, stage form %v; want both invalid", c.expr, errScan, errStage)
			}
			continue
		}
		if errScan != nil || errStage != nil {
			t.Errorf("%s: scan form %v, stage form %v", c.expr, errScan, errStage)
			continue
		}
		var want []string
		for i := range formsRows {
			if c.keep(formsRowOf(i)) {
				want = append(want, fmt.Sprint(i))
			}
		}
		ids := func(rows []string) []string {
			out := make([]string, len(rows))
			for i, r := range rows {
				out[i], _, _ = strings.Cut(r, " ")
			}
			return out
		}
		if got := strings.Join(ids(inScan), ","); got != strings.Join(want, ",") {
			t.Errorf("%s: scan form kept %s, want %s", c.expr, got, strings.Join(want, ","))
		}
		if strings.Join(inStage, "\n") != strings.Join(inScan, "\n") {
			t.Errorf("%s: stage form kept %s, scan form %s", c.expr, strings.Join(ids(inStage), ","), strings.Join(ids(inScan), ","))
		}
		pruned[c.expr] = statsStage.RowGroupsPruned
		if statsScan.RowGroupsPruned != statsStage.RowGroupsPruned || statsScan.BytesFetched != statsStage.BytesFetched {
			t.Errorf("%s: scan form pruned %d row groups and fetched %d bytes, stage form %d and %d", c.expr,
				statsScan.RowGroupsPruned, statsScan.BytesFetched, statsStage.RowGroupsPruned, statsStage.BytesFetched)
		}
	}
	// Pruning happened where the statistics allow it.
	for expr, want := range map[string]int{"id < 10 or id >= 90": 8, "d <= '1998-09-02'": 8, "x is null": 0, "d >= date '1998-09-01' + interval '9' day": 9} {
		if pruned[expr] != want {
			t.Errorf("%s: %d row groups pruned, want %d", expr, pruned[expr], want)
		}
	}
}

// TestEmptyRowGroups: a dataset with empty row groups is read through
// scan in dataset order, as a scan source and as an object input.
func TestEmptyRowGroups(t *testing.T) {
	st := store.New(store.NewMemDriver(), "mem://empty-rg/")
	mem := checkedMem(t)
	sc := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for g, rows := range []int{3, 0, 2, 0, 0, 4} {
		w.NewBufferedRowGroup()
		if rows == 0 {
			continue
		}
		b := array.NewInt64Builder(memory.NewGoAllocator())
		for i := range rows {
			b.Append(int64(g*10 + i))
			want = append(want, fmt.Sprint(g*10+i))
		}
		a := b.NewArray()
		rec := array.NewRecordBatch(sc, []arrow.Array{a}, int64(rows))
		if err := w.WriteBuffered(rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		a.Release()
		b.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), "d/x.parquet", bytes.NewReader(buf.Bytes()), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	open := func(ctx context.Context, u string) (*store.Store, string, error) {
		return st, strings.TrimPrefix(u, "mem://empty-rg/"), nil
	}
	ds, err := scan.Open(context.Background(), st, "d/x.parquet", scan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	empty := 0
	for _, f := range ds.Files() {
		empty = f.RowGroups - ds.RowGroups()
	}
	if empty == 0 {
		t.Fatal("the file has no empty row group: the test tests nothing")
	}
	for _, src := range []SourceStage{
		Scan([]string{"mem://empty-rg/d/"}, ScanOptions{Open: open, Concurrency: 3}),
		Merge([]SortKey{{Column: "k"}}, []string{"mem://empty-rg/d/x.parquet"}),
	} {
		rows, err := collectFirst(t, mem, src, open)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(rows, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: %v, want %v", src.Name(), rows, want)
		}
	}
}

// collectFirst collects the first column of a source read through open.
func collectFirst(t *testing.T, mem memory.Allocator, src SourceStage, open store.Opener) ([]string, error) {
	var rows []string
	err := Run(context.Background(), Pipeline{Source: src, Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			rows = append(rows, rec.Column(0).ValueStr(i))
		}
		return nil
	})}}, Options{Mem: mem, Workers: 2, Open: open})
	return rows, err
}
