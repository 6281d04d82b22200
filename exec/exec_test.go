package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	dataOnce sync.Once
	dataErr  error
)

// testBuckets are the mem:// buckets of this package's tests, which
// share generated data between runs.
var testBuckets = store.NewMemBuckets()

// testOpen is the Options.Open of the tests' runs: mem:// in testBuckets.
func testOpen(ctx context.Context, url string) (*store.Store, string, error) {
	return store.Open(ctx, url, store.Options{MemBuckets: testBuckets})
}

// testData generates small taxi and lineitem datasets into an in-process
// store, once: mem://exec-test/taxi/ and mem://exec-test/lineitem/.
func testData(t testing.TB) (taxi, lineitem string) {
	t.Helper()
	dataOnce.Do(func() {
		st, _, err := store.Open(context.Background(), "mem://exec-test/", store.Options{MemBuckets: testBuckets})
		if err != nil {
			dataErr = err
			return
		}
		ctx := context.Background()
		if _, err := gen.Taxi(ctx, st, "taxi", gen.Options{Rows: 30_000, Files: 3, Seed: 7, RowGroupRows: 4000}); err != nil {
			dataErr = err
			return
		}
		_, dataErr = gen.Lineitem(ctx, st, "lineitem", gen.Options{Rows: 30_000, Files: 3, Seed: 7, RowGroupRows: 4000})
	})
	if dataErr != nil {
		t.Fatal(dataErr)
	}
	return "mem://exec-test/taxi/", "mem://exec-test/lineitem/"
}

// bytesSource is an IPC stream held in memory.
func bytesSource(b []byte) SourceStage { return ReadIPC(bytes.NewReader(b)) }

// compileExpr parses and binds an expression as a stage does.
func compileExpr(stage, input string, schema *arrow.Schema) (*expr.Expr, error) {
	e, err := expr.Compile(input, schema)
	return e, stageExprError(stage, err)
}

func checkedMem(t *testing.T) *memory.CheckedAllocator {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	return mem
}

// fused runs the stages in one process and returns the stream as IPC.
func fused(t *testing.T, mem memory.Allocator, workers int, src SourceStage, stages ...Stage) []byte {
	t.Helper()
	var out bytes.Buffer
	err := Run(context.Background(), Pipeline{Source: src, Stages: append(stages, WriteIPC(&out))}, Options{Open: testOpen, Mem: mem, Workers: workers, Memory: 1 << 20})
	if err != nil {
		t.Fatalf("fused %v: %v", stages, err)
	}
	return out.Bytes()
}

// piped runs each stage on its own over the IPC stream of the one before,
// as separate processes would.
func piped(t *testing.T, mem memory.Allocator, src SourceStage, stages ...Stage) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := Run(context.Background(), Pipeline{Source: src, Stages: []Stage{WriteIPC(&out)}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatalf("source: %v", err)
	}
	for _, s := range stages {
		in := out.Bytes()
		out = bytes.Buffer{}
		if err := Run(context.Background(), Pipeline{Source: ReadIPC(bytes.NewReader(in)), Stages: []Stage{s, WriteIPC(&out)}}, Options{Open: testOpen, Mem: mem, Memory: 1 << 20}); err != nil {
			t.Fatalf("piped %s: %v", s.Name(), err)
		}
	}
	return out.Bytes()
}

// table reads an IPC stream back as text, one line per row, for
// comparisons that print well.
func table(t *testing.T, b []byte) []string {
	t.Helper()
	var rows []string
	err := Run(context.Background(), Pipeline{Source: bytesSource(b), Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
		rows = append(rows, rowText(rec, "|")...)
		return nil
	})}}, Options{Open: testOpen})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func mustStage(t testing.TB) func(Stage, error) Stage {
	return func(s Stage, err error) Stage {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestPipedEqualsFused: every stage gives the same IPC stream, byte for
// byte, run fused on 1 or 3 workers or piped stage by stage.
func TestPipedEqualsFused(t *testing.T) {
	taxi, lineitem := testData(t)
	must := mustStage(t)
	taxiCols := []string{"pickup_date", "trip_distance", "payment_type", "passenger_count", "fare_amount", "pickup_datetime"}
	cases := []struct {
		name   string
		src    SourceStage
		stages []Stage
		rows   int // expected rows, -1 to skip
	}{
		{"select", Scan([]string{taxi}, ScanOptions{}), []Stage{Select("trip_distance", "vendor_id")}, 30000},
		{"drop", Scan([]string{taxi}, ScanOptions{}), []Stage{Drop("payment_type", "vendor_id")}, 30000},
		{"rename", Scan([]string{taxi}, ScanOptions{Columns: taxiCols}), []Stage{Rename([2]string{"trip_distance", "miles"})}, 30000},
		{"filter", Scan([]string{taxi}, ScanOptions{Columns: taxiCols}), []Stage{must(Filter("trip_distance > 3 and (payment_type = 'card' or passenger_count >= 2) and pickup_date < date '2023-03-01'"))}, -1},
		{"filter-prefix", Scan([]string{lineitem}, ScanOptions{}), []Stage{must(Filter("starts_with(l_shipmode, 'RE') and not l_returnflag = 'N'"))}, -1},
		{"sum-by", Scan([]string{taxi}, ScanOptions{Columns: taxiCols}), []Stage{SumBy([]string{"pickup_date"}, []string{"trip_distance", "fare_amount"})}, 365},
		{"count-by", Scan([]string{taxi}, ScanOptions{Columns: taxiCols}), []Stage{CountBy([]string{"payment_type", "passenger_count"})}, -1},
		{"agg-by", Scan([]string{lineitem}, ScanOptions{}), []Stage{must(AggBy([]string{"l_shipmode"}, "sum(l_quantity), count(), min(l_shipdate), max(l_comment), mean(l_discount) as disc, sum(l_extendedprice * (1 - l_discount)) as revenue"))}, 7},
		{"sort", Scan([]string{taxi}, ScanOptions{Columns: taxiCols}), []Stage{Sort([]SortKey{{Column: "payment_type"}, {Column: "trip_distance", Desc: true}})}, 30000},
		{"top", Scan([]string{taxi}, ScanOptions{Columns: taxiCols}), []Stage{Top(25, []SortKey{{Column: "fare_amount", Desc: true}})}, 25},
		{"head", Scan([]string{taxi}, ScanOptions{Columns: taxiCols}), []Stage{Head(12345)}, 12345},
		{"chain", Scan([]string{taxi}, ScanOptions{}), []Stage{Select("pickup_date", "trip_distance", "tip_amount"), must(Filter("tip_amount > 0")), Rename([2]string{"tip_amount", "tip"}), SumBy([]string{"pickup_date"}, []string{"trip_distance", "tip"}), Sort([]SortKey{{Column: "tip", Desc: true}}), Head(20)}, 20},
		{"query A", Scan([]string{taxi}, ScanOptions{Columns: []string{"pickup_date", "trip_distance"}}), []Stage{SumBy([]string{"pickup_date"}, []string{"trip_distance"}), Top(9, []SortKey{{Column: "trip_distance", Desc: true}})}, 9},
		{"query B", Scan([]string{lineitem}, ScanOptions{Columns: queryBCols}), []Stage{must(Filter("l_shipdate <= date '1998-09-02'")), must(AggBy([]string{"l_returnflag", "l_linestatus"}, QueryBAggs))}, 4},
		{"query B dict", Scan([]string{lineitem}, ScanOptions{Columns: queryBCols, Dict: []string{"l_returnflag", "l_linestatus"}}), []Stage{must(Filter("l_shipdate <= date '1998-09-02'")), must(AggBy([]string{"l_returnflag", "l_linestatus"}, QueryBAggs))}, 4},
		{"dict filter sort", Scan([]string{lineitem}, ScanOptions{Columns: []string{"l_shipmode", "l_returnflag", "l_quantity", "l_comment"}, Dict: []string{"l_shipmode", "l_returnflag"}}), []Stage{must(Filter("l_quantity > 30 and starts_with(l_shipmode, 'RE') and l_returnflag != 'N'")), Sort([]SortKey{{Column: "l_shipmode"}, {Column: "l_comment"}})}, -1},
		{"dict count-by", Scan([]string{taxi}, ScanOptions{Columns: taxiCols, Dict: []string{"payment_type"}}), []Stage{CountBy([]string{"passenger_count", "payment_type"})}, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := checkedMem(t)
			want := piped(t, mem, c.src, c.stages...)
			for _, w := range []int{1, 3} {
				got := fused(t, mem, w, c.src, c.stages...)
				if !bytes.Equal(got, want) {
					g, p := table(t, got), table(t, want)
					t.Fatalf("%d workers: fused differs from piped:\nfused %d rows %.5q\npiped %d rows %.5q", w, len(g), g, len(p), p)
				}
			}
			// The same through a Pool, whose buffers are reused.
			pool := memory.NewCheckedAllocator(mempool.New(8 << 20))
			if got := piped(t, pool, c.src, c.stages...); !bytes.Equal(got, want) {
				t.Fatalf("piped through a Pool differs")
			}
			if got := fused(t, pool, 3, c.src, c.stages...); !bytes.Equal(got, want) {
				t.Fatalf("fused through a Pool differs")
			}
			pool.AssertSize(t, 0)
			if rows := table(t, want); c.rows >= 0 && len(rows) != c.rows {
				t.Fatalf("%d rows, want %d", len(rows), c.rows)
			}
		})
	}
}

var queryBCols = []string{"l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_shipdate"}

// TestDictKeysGroupAsValues: reading the keys as dictionaries changes
// nothing in an aggregation's result, though every row group has its own
// dictionary.
func TestDictKeysGroupAsValues(t *testing.T) {
	taxi, lineitem := testData(t)
	must := mustStage(t)
	mem := checkedMem(t)
	for _, c := range []struct {
		url        string
		cols, dict []string
		stages     []Stage
	}{
		{lineitem, queryBCols, []string{"l_returnflag", "l_linestatus"}, []Stage{must(Filter("l_shipdate <= date '1998-09-02'")), must(AggBy([]string{"l_returnflag", "l_linestatus"}, QueryBAggs))}},
		{lineitem, []string{"l_shipmode", "l_shipinstruct", "l_quantity"}, []string{"l_shipinstruct"}, []Stage{must(AggBy([]string{"l_shipmode", "l_shipinstruct"}, "sum(l_quantity), count()"))}},
		{taxi, []string{"payment_type", "passenger_count"}, []string{"payment_type"}, []Stage{CountBy([]string{"payment_type"})}},
	} {
		want := fused(t, mem, 2, Scan([]string{c.url}, ScanOptions{Columns: c.cols}), c.stages...)
		got := fused(t, mem, 2, Scan([]string{c.url}, ScanOptions{Columns: c.cols, Dict: c.dict}), c.stages...)
		if !bytes.Equal(got, want) {
			t.Fatalf("%v by dictionary:\n%q\nby value:\n%q", c.dict, table(t, got), table(t, want))
		}
	}
	// Formats that cannot hold a changing dictionary get the values.
	cols := []string{"l_shipmode", "l_returnflag", "l_quantity"}
	for _, name := range []string{"x.csv", "x.arrow"} {
		var files [2][]byte
		for k, dict := range [][]string{nil, {"l_shipmode", "l_returnflag"}} {
			url := fmt.Sprintf("mem://exec-dict-%d/%s", k, name)
			err := Run(context.Background(), Pipeline{Source: Scan([]string{lineitem}, ScanOptions{Columns: cols, Dict: dict}), Stages: []Stage{Write(url)}}, Options{Open: testOpen, Mem: mem})
			if err != nil {
				t.Fatal(err)
			}
			st, key, err := store.Open(context.Background(), url, store.Options{MemBuckets: testBuckets})
			if err != nil {
				t.Fatal(err)
			}
			if files[k], err = st.ReadAll(context.Background(), key); err != nil {
				t.Fatal(err)
			}
		}
		if len(files[0]) == 0 || !bytes.Equal(files[0], files[1]) {
			t.Fatalf("%s written with dictionaries: %d bytes, %d by value", name, len(files[1]), len(files[0]))
		}
	}
}

// QueryBAggs is query B's aggregates (TPC-H Q1's).
const QueryBAggs = "sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price, " +
	"sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, " +
	"sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, " +
	"mean(l_quantity) as avg_qty, mean(l_extendedprice) as avg_price, mean(l_discount) as avg_disc, count() as count_order"

func batch(t testing.TB, mem memory.Allocator, schema *arrow.Schema, rows ...[]any) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, r := range rows {
		for c, v := range r {
			f := b.Field(c)
			if v == nil {
				f.AppendNull()
				continue
			}
			switch f := f.(type) {
			case *array.Int64Builder:
				f.Append(int64(v.(int)))
			case *array.Int32Builder:
				f.Append(int32(v.(int)))
			case *array.Uint16Builder:
				f.Append(uint16(v.(int)))
			case *array.Float64Builder:
				f.Append(v.(float64))
			case *array.StringBuilder:
				f.Append(v.(string))
			case *array.BooleanBuilder:
				f.Append(v.(bool))
			default:
				t.Fatalf("no builder for %T", f)
			}
		}
	}
	return b.NewRecordBatch()
}

var kvSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

func collectRows(t *testing.T, mem memory.Allocator, src SourceStage, stages ...Stage) ([]string, error) {
	var rows []string
	err := Run(context.Background(), Pipeline{Source: src, Stages: append(stages, Collect(nil, func(rec arrow.RecordBatch) error {
		rows = append(rows, rowText(rec, " ")...)
		return nil
	}))}, Options{Open: testOpen, Mem: mem, Workers: 2})
	return rows, err
}

// rowText is each row of rec as text: its values joined by sep.
func rowText(rec arrow.RecordBatch, sep string) []string {
	var rows []string
	for i := range int(rec.NumRows()) {
		var cells []string
		for _, c := range rec.Columns() {
			cells = append(cells, c.ValueStr(i))
		}
		rows = append(rows, strings.Join(cells, sep))
	}
	return rows
}

func TestAggregatesAndNulls(t *testing.T) {
	mem := checkedMem(t)
	b1 := batch(t, mem, kvSchema, []any{"a", 1, 1.5}, []any{"b", 2, nil}, []any{nil, 3, 2.0}, []any{"a", nil, 0.5})
	defer b1.Release()
	b2 := batch(t, mem, kvSchema, []any{"b", 10, 4.0}, []any{nil, 5, nil}, []any{"c", nil, nil})
	defer b2.Release()
	agg, err := AggBy([]string{"k"}, "sum(n), count(), count(x), min(x), max(n), mean(x), sum(n * 2 + 1) as m")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := collectRows(t, mem, FromBatches(kvSchema, b1, b2), agg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a 1 2 2 0.5 1 1 3",
		"b 12 2 1 4 10 4 26",
		"c (null) 1 0 (null) (null) (null) (null)",
		"(null) 8 2 1 2 5 2 18",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// TestAggRuns: rows that come in long runs of one group (a table sorted
// by its key) are summed a run at a time; the figures are those of the
// same rows in an order with no runs. The values are multiples of 1/4,
// whose sums are exact in any order.
func TestAggRuns(t *testing.T) {
	mem := checkedMem(t)
	const n = 4000
	row := func(i int) []any {
		r := []any{fmt.Sprintf("g%d", i/500), i, float64(i%7) / 4}
		if i%11 == 0 {
			r[2] = nil
		}
		if i/500 == 3 {
			r[0] = nil
		}
		return r
	}
	var sorted, shuffled [][]any
	for i := range n {
		sorted = append(sorted, row(i))
		shuffled = append(shuffled, row(i*1237%n)) // 1237 is prime to 4000
	}
	var got [2][]string
	for j, rows := range [][][]any{sorted, shuffled} {
		b := batch(t, mem, kvSchema, rows...)
		agg, err := AggBy([]string{"k"}, "sum(x), mean(x), count(), count(x), sum(n), min(x)")
		if err != nil {
			t.Fatal(err)
		}
		out, err := collectRows(t, mem, FromBatches(kvSchema, b), agg)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		got[j] = out
	}
	if len(got[0]) != 8 || strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Fatalf("in runs:\n%s\nin no order:\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
	}
	var buf []int32
	if r := runsOf([]int32{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}, &buf); r != nil {
		t.Errorf("alternating groups: runs %v", r)
	}
	long := append(slices.Repeat([]int32{2}, 40), slices.Repeat([]int32{-1}, 30)...)
	if r := runsOf(long, &buf); !slices.Equal(r, []int32{0, 40, 70}) {
		t.Errorf("two long runs: %v", r)
	}
}

func TestFilterSemantics(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, kvSchema, []any{"apple", 1, 1.5}, []any{"banana", 2, nil}, []any{nil, 3, 2.0}, []any{"apricot", nil, -0.5})
	defer b.Release()
	cases := map[string][]string{
		"x > 1":                                  {"apple 1 1.5", "(null) 3 2"},
		"x > 1 or n = 2":                         {"apple 1 1.5", "banana 2 (null)", "(null) 3 2"},
		"not (x > 1)":                            {"apricot (null) -0.5"},
		"x is null or k is null":                 {"banana 2 (null)", "(null) 3 2"},
		"starts_with(k, 'ap') and n is null":     {"apricot (null) -0.5"},
		"k != 'apple' and k >= 'b'":              {"banana 2 (null)"},
		"n % 2 = 1 and n / 2 > 1":                {"(null) 3 2"},
		"-x < 0 && abs(x) = 1.5":                 {"apple 1 1.5"},
		"n * 1.5 = 3 || k = 'apricot'":           {"banana 2 (null)", "apricot (null) -0.5"},
		"true":                                   {"apple 1 1.5", "banana 2 (null)", "(null) 3 2", "apricot (null) -0.5"},
		"1 > 2":                                  nil,
		"contains(k, 'an') or ends_with(k, 'e')": {"apple 1 1.5", "banana 2 (null)"},
	}
	for expr, want := range cases {
		f, err := Filter(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		got, err := collectRows(t, mem, FromBatches(kvSchema, b), f)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if strings.Join(got, ";") != strings.Join(want, ";") {
			t.Errorf("%s: got %q, want %q", expr, got, want)
		}
	}
}

func TestDateAndTimestampFilters(t *testing.T) {
	taxi, _ := testData(t)
	mem := checkedMem(t)
	for _, c := range []struct {
		expr string
		want string
	}{
		{"pickup_date = date '2023-01-01'", "2023-01-01"},
		{"pickup_datetime < timestamp '2023-01-02' and pickup_datetime >= date '2023-01-01' + 0", "2023-01-01"},
		{"pickup_date - date '2023-01-01' = 1", "2023-01-02"},
		{"pickup_date = date '2023-01-03' - 1", "2023-01-02"},
	} {
		f, err := Filter(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := collectRows(t, mem, Scan([]string{taxi}, ScanOptions{Columns: []string{"pickup_date", "pickup_datetime"}}), f, CountBy([]string{"pickup_date"}))
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if len(rows) != 1 || !strings.HasPrefix(rows[0], c.want+" ") {
			t.Errorf("%s: %q", c.expr, rows)
		}
	}
}

func TestParseErrorsPointAtPosition(t *testing.T) {
	for _, c := range []struct {
		expr string
		pos  int
		msg  string
	}{
		{"a > (b + )", 10, "expected a value"},
		{"a >", 4, "expected a value"},
		{"a = 'x", 5, "unterminated string"},
		{"(a > 1", 7, "expected ) to close"},
		{"a > 1 b", 7, "after a complete expression"},
		{"a < b < c", 7, "do not chain"},
		{"a # 1", 3, "unexpected character"},
		{"x is nul", 6, "expected null"},
		{"12abc > 1", 3, "after a number"},
	} {
		_, err := Filter(c.expr)
		var pe *expr.Error
		if !errors.As(err, &pe) {
			t.Fatalf("%q: %v, want an *expr.Error", c.expr, err)
		}
		if pe.Pos != c.pos || !strings.Contains(pe.Msg, c.msg) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: %v (pos %d), want pos %d and %q", c.expr, err, pe.Pos, c.pos, c.msg)
		}
		if !strings.HasPrefix(err.Error(), "filter: at position ") {
			t.Errorf("%q: %v does not name the stage and position", c.expr, err)
		}
	}
}

func TestBindErrorsNameColumnAndStage(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, kvSchema, []any{"a", 1, 1.5})
	defer b.Release()
	must := mustStage(t)
	for _, c := range []struct {
		stage Stage
		want  []string
	}{
		{Select("k", "nope"), []string{"select:", `"nope"`, "columns: k, n, x"}},
		{must(Filter("nope > 1")), []string{"filter:", `"nope"`, "position 1"}},
		{must(Filter("k > 1")), []string{"filter:", "cannot compare a string with an integer", "position 3"}},
		{must(Filter("n > 1 and k")), []string{"filter:", "needs booleans"}},
		{must(Filter("n + 1")), []string{"filter:", "not a condition"}},
		{SumBy([]string{"k"}, []string{"k"}), []string{"sum-by:", `column "k"`, "string"}},
		{SumBy([]string{"missing"}, []string{"n"}), []string{"sum-by:", `"missing"`}},
		{must(AggBy([]string{"k"}, "mean(k)")), []string{"agg-by:", "mean", `"k"`}},
		{Sort([]SortKey{{Column: "z"}}), []string{"sort:", `"z"`}},
		{Top(3, []SortKey{{Column: "z"}}), []string{"top:", `"z"`}},
		{Rename([2]string{"k", "n"}), []string{"rename:", `"n"`}},
		{Partition(4, []string{"z"}, "mem://x/", "arrow"), []string{"partition:", `"z"`}},
	} {
		_, err := collectRows(t, mem, FromBatches(kvSchema, b), c.stage)
		if err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want an ErrInvalid", c.stage.Name(), err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", c.stage.Name(), err, w)
			}
		}
	}
	for _, bad := range []string{"sum(x", "total(x)", "sum(a, b)", "sum()", "count() as", "sum(x) sum(y)", ""} {
		if _, err := AggBy([]string{"k"}, bad); err == nil || !errors.Is(err, ErrInvalid) {
			t.Errorf("AggBy %q: %v, want an ErrInvalid", bad, err)
		}
	}
}

func ipcOf(t *testing.T, mem memory.Allocator, recs ...arrow.RecordBatch) []byte {
	var out bytes.Buffer
	if err := Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, recs...), Stages: []Stage{WriteIPC(&out)}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestBrokenIPCIsAnError(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, kvSchema, []any{"a", 1, 1.5}, []any{"b", 2, 2.5})
	defer b.Release()
	full := ipcOf(t, mem, b, b)
	if rows, err := collectRows(t, mem, bytesSource(full), Select("k")); err != nil || len(rows) != 4 {
		t.Fatalf("whole stream: %d rows, %v", len(rows), err)
	}
	oneBatch := ipcOf(t, mem, b)
	cases := map[string][]byte{
		"empty":              nil,
		"no end marker":      full[:len(full)-8],
		"cut mid-message":    full[:len(full)-40],
		"cut after schema":   oneBatch[:len(oneBatch)-len(full)+len(oneBatch)-8],
		"garbage":            []byte("this is not arrow at all, no, not at all"),
		"garbage after head": append(append([]byte(nil), full[:len(full)-8]...), 0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 1, 2),
	}
	for name, in := range cases {
		rows, err := collectRows(t, mem, bytesSource(in), Select("k"))
		if err == nil {
			t.Errorf("%s: no error, %d rows", name, len(rows))
		}
	}
}

func TestSortSpills(t *testing.T) {
	taxi, _ := testData(t)
	mem := checkedMem(t)
	dir := t.TempDir()
	keys := []SortKey{{Column: "payment_type"}, {Column: "fare_amount", Desc: true}}
	src := Scan([]string{taxi}, ScanOptions{Columns: []string{"payment_type", "fare_amount", "pickup_datetime"}, BatchRows: 1000})
	var runs int // spill files open while the sort's output flows
	sort := Sort(keys)
	run := func(memory int64) []byte {
		var out bytes.Buffer
		var w *ipc.Writer
		runs = 0
		sink := Collect(func(s *arrow.Schema) { w = ipc.NewWriter(&out, ipc.WithSchema(s)) }, func(rec arrow.RecordBatch) error {
			runs = max(runs, openIn(t, dir))
			return w.Write(rec)
		})
		if err := Run(context.Background(), Pipeline{Source: src, Stages: []Stage{sort, sink}}, Options{Open: testOpen, Mem: mem, Memory: memory, TempDir: dir}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	inMemory := run(1 << 30)
	if runs != 0 {
		t.Fatalf("a sort in memory held %d spill files", runs)
	}
	spilled := run(64 << 10) // many runs
	if runs < 2 {
		t.Fatalf("a sort of 30,000 rows in 64 KiB held %d spill files, want many runs", runs)
	}
	if openIn(t, dir) != 0 {
		t.Fatal("spill files still open after the sort")
	}
	if !bytes.Equal(inMemory, spilled) {
		t.Fatal("a sort that spilled differs from one in memory")
	}
	// A sort stage of a plan without --memory of its own is bounded by
	// the run's budget (run --memory, a job's workers').
	p, err := plan.Parse("scan x | sort --by payment_type,fare_amount:desc")
	if err != nil {
		t.Fatal(err)
	}
	if sort, err = CompileStage(p.Stages[1], Env{}); err != nil {
		t.Fatal(err)
	}
	if planned := run(64 << 10); runs < 2 || !bytes.Equal(planned, inMemory) {
		t.Fatalf("a planned sort in a run of 64 KiB held %d spill files, want many runs (same rows: %v)", runs, bytes.Equal(planned, inMemory))
	}
	rows := table(t, spilled)
	if len(rows) != 30000 {
		t.Fatalf("%d rows", len(rows))
	}
	if left, _ := readDirNames(dir); len(left) != 0 {
		t.Fatalf("spill files left behind: %v", left)
	}
}

func TestMergeSortedInputs(t *testing.T) {
	taxi, _ := testData(t)
	mem := checkedMem(t)
	keys := []SortKey{{Column: "fare_amount"}}
	cols := ScanOptions{Columns: []string{"fare_amount", "trip_distance"}}
	// Three sorted parts, one per file, and the whole sorted at once.
	for i := range 3 {
		url := fmt.Sprintf("%spart-%05d.parquet", taxi, i)
		out := fmt.Sprintf("mem://exec-test/sorted/%d.arrow", i)
		if err := Run(context.Background(), Pipeline{Source: Scan([]string{url}, cols), Stages: []Stage{Sort(keys), Write(out)}}, Options{Open: testOpen, Mem: mem}); err != nil {
			t.Fatal(err)
		}
	}
	want := fused(t, mem, 2, Scan([]string{taxi}, cols), Sort(keys))
	got := fused(t, mem, 2, Merge(keys, []string{"mem://exec-test/sorted/"}), Select("fare_amount", "trip_distance"))
	if !bytes.Equal(got, want) {
		t.Fatal("merging sorted parts differs from sorting the whole")
	}
	// Merge after a stage: the stream so far is the first input.
	got = fused(t, mem, 2, Scan([]string{taxi + "part-00000.parquet"}, cols), Sort(keys), Merge(keys, []string{"mem://exec-test/sorted/1.arrow", "mem://exec-test/sorted/2.arrow"}))
	if !bytes.Equal(got, want) {
		t.Fatal("merge after sort differs from sorting the whole")
	}
	// An unsorted input is an error naming it.
	if err := Run(context.Background(), Pipeline{Source: Scan([]string{taxi + "part-00001.parquet"}, cols), Stages: []Stage{Write("mem://exec-test/unsorted.arrows")}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	_, err := collectRows(t, mem, Merge(keys, []string{"mem://exec-test/sorted/0.arrow", "mem://exec-test/unsorted.arrows"}), Head(1_000_000))
	if err == nil || !strings.Contains(err.Error(), "unsorted.arrows is not sorted") {
		t.Fatalf("unsorted input: %v", err)
	}
}

func TestPartitionWritesEveryPartition(t *testing.T) {
	taxi, _ := testData(t)
	mem := checkedMem(t)
	src := Scan([]string{taxi}, ScanOptions{Columns: []string{"pu_location_id", "fare_amount"}})
	for _, w := range []int{1, 3} {
		out := fmt.Sprintf("mem://exec-part-%d/p/", w)
		if err := Run(context.Background(), Pipeline{Source: src, Stages: []Stage{Partition(5, []string{"pu_location_id"}, out, "arrow")}}, Options{Open: testOpen, Mem: mem, Workers: w}); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for i := range 5 {
		var parts [][]byte
		for _, w := range []int{1, 3} {
			st, _, _ := store.Open(context.Background(), fmt.Sprintf("mem://exec-part-%d/", w), store.Options{MemBuckets: testBuckets})
			b, err := st.ReadAll(context.Background(), fmt.Sprintf("p/part-%05d.arrow", i))
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, b)
		}
		if !bytes.Equal(parts[0], parts[1]) {
			t.Fatalf("partition %d differs between 1 and 3 workers", i)
		}
		rows, err := collectRows(t, mem, Merge([]SortKey{{Column: "pu_location_id"}}, nil), Head(1))
		_ = rows
		if err == nil {
			t.Fatal("merge with no inputs ran")
		}
		got, err := collectRows(t, mem, Scan(nil, ScanOptions{}), Head(1))
		if err == nil {
			t.Fatalf("scan with no URL ran: %v", got)
		}
		// Every key is in the partition its hash names.
		var n int
		err = Run(context.Background(), Pipeline{Source: &objectStage{url: fmt.Sprintf("mem://exec-part-1/p/part-%05d.arrow", i)}, Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
			enc, _ := newKeyEncoder("t", rec.Schema(), []string{"pu_location_id"})
			var kr keyRows
			enc.encode(rec, &kr)
			for r := range int(rec.NumRows()) {
				if PartitionOf(kr.row(r), 5) != i {
					return fmt.Errorf("row %d of partition %d hashes elsewhere", r, i)
				}
			}
			n += int(rec.NumRows())
			return nil
		})}}, Options{Open: testOpen, Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != 30000 {
		t.Fatalf("partitions hold %d rows, want 30000", total)
	}
}

// objectStage reads one object by its suffix (tests only).
type objectStage struct{ url string }

func (s *objectStage) Name() string { return "object" }
func (s *objectStage) open(ctx context.Context, e *env) (Source, error) {
	st, key, err := e.open(ctx, s.url)
	if err != nil {
		return nil, err
	}
	return openObject(ctx, e, st, key)
}

func TestWriteFormatsRoundTrip(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	cols := ScanOptions{Columns: []string{"l_orderkey", "l_quantity", "l_shipdate", "l_shipmode", "l_comment"}}
	want := fused(t, mem, 2, Scan([]string{lineitem}, cols))
	for _, ext := range []string{"parquet", "arrow", "arrows", "csv"} {
		url := "mem://exec-write/out." + ext
		if err := Run(context.Background(), Pipeline{Source: Scan([]string{lineitem}, cols), Stages: []Stage{Write(url)}}, Options{Open: testOpen, Mem: mem}); err != nil {
			t.Fatalf("%s: %v", ext, err)
		}
		got := fused(t, mem, 2, &objectStage{url: url})
		if g, w := table(t, got), table(t, want); strings.Join(g, "\n") != strings.Join(w, "\n") {
			t.Errorf("%s: read back %d rows differing from the %d written (%.2q vs %.2q)", ext, len(g), len(w), g, w)
		}
	}
}

func TestCSVRoundTripAndShow(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, kvSchema, []any{"a,b", 1, 1.5}, []any{"c", nil, -2.25}, []any{nil, 3, nil})
	defer b.Release()
	var csvOut bytes.Buffer
	if err := Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, b), Stages: []Stage{ToCSV(&csvOut)}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	if got, want := csvOut.String(), "k,n,x\n\"a,b\",1,1.5\nc,,-2.25\n,3,\n"; got != want {
		t.Fatalf("to-csv: %q, want %q", got, want)
	}
	var shown bytes.Buffer
	if err := Run(context.Background(), Pipeline{Source: FromCSV(nil, strings.NewReader(csvOut.String()), CSVOptions{}), Stages: []Stage{Show(&shown, 2)}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"k           n        x\n" +
		"string  int64  float64\n" +
		"------  -----  -------\n" +
		"a,b         1      1.5\n" +
		"c        null    -2.25\n" +
		"(3 rows, first 2 shown)\n"
	if shown.String() != want {
		t.Fatalf("show:\n%s\nwant:\n%s", shown.String(), want)
	}
	var empty bytes.Buffer
	f, _ := Filter("n > 100")
	if err := Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, b), Stages: []Stage{f, ToCSV(&empty)}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	if empty.String() != "k,n,x\n" {
		t.Fatalf("empty to-csv: %q", empty.String())
	}
}

func TestFailuresReleaseEverything(t *testing.T) {
	taxi, _ := testData(t)
	mem := checkedMem(t)
	boom := errors.New("boom")
	calls := 0
	failing := Collect(nil, func(arrow.RecordBatch) error {
		calls++
		if calls == 3 {
			return boom
		}
		return nil
	})
	f, _ := Filter("trip_distance > 1")
	err := Run(context.Background(), Pipeline{Source: Scan([]string{taxi}, ScanOptions{BatchRows: 500}), Stages: []Stage{f, failing}}, Options{Open: testOpen, Mem: mem, Workers: 3})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	// Cancelled midway.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err = Run(ctx, Pipeline{Source: Scan([]string{taxi}, ScanOptions{BatchRows: 500}), Stages: []Stage{SumBy([]string{"pickup_date"}, []string{"fare_amount"}), Sort([]SortKey{{Column: "fare_amount"}}), Collect(nil, func(arrow.RecordBatch) error {
		n++
		cancel()
		return nil
	})}}, Options{Open: testOpen, Mem: mem, Workers: 3})
	cancel()
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// A failing write leaves no object.
	err = Run(context.Background(), Pipeline{Source: Scan([]string{taxi}, ScanOptions{}), Stages: []Stage{Head(10), Write("mem://exec-fail/x.unknown")}}, Options{Open: testOpen, Mem: mem})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("write to an unknown format: %v", err)
	}
	// Head stops the scan early without error.
	rows, err := collectRows(t, mem, Scan([]string{taxi}, ScanOptions{BatchRows: 100}), Head(5), Select("vendor_id"))
	if err != nil || len(rows) != 5 {
		t.Fatalf("head: %d rows, %v", len(rows), err)
	}
}

func TestSinkMustBeLast(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, kvSchema, []any{"a", 1, 1.5})
	defer b.Release()
	err := Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, b), Stages: []Stage{Show(io.Discard, 0), Select("k")}}, Options{Open: testOpen, Mem: mem})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "show") {
		t.Fatalf("sink in the middle: %v", err)
	}
	err = Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, b), Stages: []Stage{Select("k")}}, Options{Open: testOpen, Mem: mem})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("no sink: %v", err)
	}
}

// openIn counts this process's open files that are or were in dir:
// spill files have no name once created (internal/spillfile), so an
// open descriptor is what shows a spill.
func openIn(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to see open spill files: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, dir+"/") {
			n++
		}
	}
	return n
}

func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}

// TestFilterCopiesRuns: a filter that keeps long runs of rows copies
// them column by column, and gives the rows that taking them one by one
// gives, for every kind of column (nulls and strings taken row by row).
func TestFilterCopiesRuns(t *testing.T) {
	_, lineitem := testData(t)
	must := mustStage(t)
	mem := checkedMem(t)
	cols := []string{"l_orderkey", "l_linenumber", "l_quantity", "l_shipdate", "l_returnflag", "l_shipmode", "l_comment"}
	for _, dict := range [][]string{nil, {"l_returnflag", "l_shipmode"}} {
		for _, expr := range []string{"l_shipdate <= date '1998-09-02'", "l_quantity > 2", "l_quantity > 40"} {
			var got, want []string
			for _, runs := range []bool{true, false} {
				var rows []string
				src := Scan([]string{lineitem}, ScanOptions{Columns: cols, Dict: dict})
				err := Run(context.Background(), Pipeline{Source: src, Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error {
					var out arrow.RecordBatch
					var err error
					if runs {
						f := must(Filter(expr)).(*filterStage)
						pl, err2 := f.bind(newEnv(Options{Open: testOpen, Mem: mem}), rec.Schema())
						if err2 != nil {
							return err2
						}
						out, err = pl.mapper.mapBatch(context.Background(), rec)
					} else {
						c, err2 := compileExpr("filter", expr, rec.Schema())
						if err2 != nil {
							return err2
						}
						v, err2 := c.Eval(rec)
						if err2 != nil {
							return err2
						}
						var keep []int32
						for i, b := range v.B {
							if b && v.IsValid(i) {
								keep = append(keep, int32(i))
							}
						}
						out, err = takeRows(context.Background(), mem, rec, func(add func(int32)) {
							for _, i := range keep {
								add(i)
							}
						}, len(keep))
					}
					if err != nil || out == nil {
						return err
					}
					defer out.Release()
					rows = append(rows, rowText(out, "|")...)
					return nil
				})}}, Options{Open: testOpen, Mem: mem})
				if err != nil {
					t.Fatal(err)
				}
				if runs {
					got = rows
				} else {
					want = rows
				}
			}
			if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s (dict %v): %d rows copied by runs, %d taken", expr, dict, len(got), len(want))
			}
		}
	}
}

// TestKeysOfASlice: string keys of a batch sliced past its start (so its
// offsets do not start at zero) group as the values they are.
func TestKeysOfASlice(t *testing.T) {
	mem := checkedMem(t)
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}}, nil)
	b := batch(t, mem, schema, []any{"aaaa"}, []any{"bb"}, []any{"c"}, []any{"bb"}, []any{"c"}, []any{"dddddd"})
	defer b.Release()
	s := b.NewSlice(2, 5)
	defer s.Release()
	rows, err := collectRows(t, mem, FromBatches(schema, s), CountBy([]string{"k"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows, ","); got != "bb 1,c 2" {
		t.Fatalf("got %q, want bb 1,c 2", got)
	}
}
