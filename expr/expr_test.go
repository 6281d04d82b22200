package expr

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "m", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Nullable: true},
	{Name: "w", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
}, nil)

// testBatch has four rows; row 3 is all null.
func testBatch(t testing.TB, mem memory.Allocator) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, testSchema)
	defer b.Release()
	day := func(s string) arrow.Date32 { d, _ := parseDate(s); return arrow.Date32(d) }
	ts := func(s string) arrow.Timestamp { v, _ := parseTimestamp(s); return arrow.Timestamp(v / 1000) }
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"apple", "banana", "cherry", ""}, []bool{true, true, true, false})
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 2, 3, 0}, []bool{true, true, true, false})
	b.Field(2).(*array.Float64Builder).AppendValues([]float64{0.5, 1.5, -2, 0}, []bool{true, true, true, false})
	b.Field(3).(*array.Date32Builder).AppendValues([]arrow.Date32{day("1998-09-01"), day("1998-09-02"), day("1998-09-03"), 0}, []bool{true, true, true, false})
	b.Field(4).(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{ts("2020-01-01 10:00:00"), ts("2020-01-02"), ts("2020-01-03 23:59:59.5"), 0}, []bool{true, true, true, false})
	b.Field(5).(*array.BooleanBuilder).AppendValues([]bool{true, false, true, false}, []bool{true, true, true, false})
	b.Field(6).(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(1250), decimal128.FromI64(-99_999_999_999_99), decimal128.FromI64(5), {}}, []bool{true, true, true, false})
	big, _ := decimal128.FromString("9999999999999999999999999999.9999999999", 38, 10)
	b.Field(7).(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(-1), big, big.Negate(), {}}, []bool{true, true, true, false})
	return b.NewRecordBatch()
}

// kept lists the rows a condition keeps (true, not null), as "0,2".
func kept(v Vec, n int) string {
	var rows []string
	for i := range n {
		j := i
		if v.Const {
			j = 0
		}
		if v.B[j] && v.IsValid(j) {
			rows = append(rows, fmt.Sprint(i))
		}
	}
	return strings.Join(rows, ",")
}

func TestFilters(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testBatch(t, mem)
	defer rec.Release()
	for _, c := range []struct{ expr, want string }{
		{"n > 1", "1,2"},
		{"d <= '1998-09-02'", "0,1"},
		{"'1998-09-02' >= d", "0,1"},
		{"d <= date '1998-09-02'", "0,1"},
		{"d = '1998-09-02'", "1"},
		{"d between '1998-09-02' and '1998-09-03'", "1,2"},
		{"d not between '1998-09-02' and '1998-09-03'", "0"},
		{"d in ('1998-09-01', '1998-09-03')", "0,2"},
		{"d < date '1998-09-03' - interval '1' day", "0"},
		{"d + interval '2' days > '1998-09-04'", "2"},
		{"t >= '2020-01-02'", "1,2"},
		{"t < timestamp '2020-01-01 10:00:01'", "0"},
		{"t < d", ""},
		{"t > date '2020-01-02' + interval '1' day", "2"},
		{"n = 1 or k = 'cherry'", "0,2"},
		{"n = 1 or n is null", "0,3"},
		{"not (n = 1) and x < 2", "1,2"},
		{"n in (1, 3, 5)", "0,2"},
		{"n not in (1, 3)", "1"},
		{"k like 'b%'", "1"},
		{"k like '%rr%'", "2"},
		{"k like '_pple'", "0"},
		{"k not like '%a%'", "2"},
		{"k like 'apple'", "0"},
		{"k is null", "3"},
		{"x is not null and b", "0,2"},
		{"b = false", "1"},
		{"b < true", "1"},
		{"n / 0 > 1 or n = 2", "0,1,2"}, // n / 0 is +inf, as in DuckDB
		{"n = 9223372036854775808", ""},
		{"abs(x) >= 1.5", "1,2"},
		{"starts_with(k, 'ch') || ends_with(k, 'na')", "1,2"},
		{"`k` = 'apple' and \"n\" = 1", "0"},
		{"true", "0,1,2,3"},
		{"1 = 2", ""},
	} {
		e, err := CompileFilter(c.expr, testSchema)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if got := kept(evalOK(t, e, rec), int(rec.NumRows())); got != c.want {
			t.Errorf("%s: kept rows %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	for _, c := range []struct {
		expr string
		pos  int
		msg  string
	}{
		{"", 1, "empty expression"},
		{"n >", 4, "expected a value"},
		{"n < 1 or", 9, "expected a value"},
		{"k = 'open", 5, "unterminated string"},
		{`"" = 1`, 1, "empty column name"},
		{"n = 12abc", 7, "after a number"},
		{"d < date '1998-13-01'", 5, "not a date"},
		{"d < '1998-13-01'", 5, "not a date"},
		{"t < 'soon'", 5, "not a timestamp"},
		{"k < 1", 3, "cannot compare a string with an integer"},
		{"nope = 1", 1, "no column"},
		{"n = null", 5, "null is only allowed"},
		{"n in 1", 6, "expected ( after in"},
		{"n between 1 or 2", 13, "expected and"},
		{"k like k", 8, "quoted pattern"},
		{"n like 'x'", 3, "like needs a string"},
		{"d + interval 'x' day > d", 14, "whole number of days"},
		{"d + interval '1' week > d", 18, "expected day, month or year"},
		{"interval '1' month > d", 1, "only be added to or subtracted from"},
		{"nope(n) > 1", 1, "unknown function nope"},
		{"upper(n) = 'A'", 7, "argument 1 of upper must be a string"},
		{"substring(k) = 'a'", 1, "takes 2 to 3 arguments"},
		{"case when n then 1 end = 1", 11, "needs a condition"},
		{"case when b then 1 else 'x' end = 1", 25, "of one kind"},
		{"case b when true then 1 = 1", 28, "expected end"},
		{"cast(k as blob) = 1", 1, "cannot cast to blob"},
		{"case when b then null end = 1", 1, "every value of this case is null"},
		{"case when b then null else 1 end = null", 36, "null is only allowed"},
		{"cast(d as integer) = 1", 1, "cannot cast a date"},
		{"extract(century from d) = 1", 9, "unknown date part"},
		{"date_trunc(k, d) = d", 12, "quoted constant"},
		{"regexp_matches(k, '(') ", 19, "bad pattern"},
		{"k || b", 3, "binds loosest"},
		{"coalesce(n, k) = 1", 13, "of one kind"},
		{"n + 1", 3, "not a condition"},
		{"größe < x", 1, "no column"},
	} {
		_, err := CompileFilter(c.expr, testSchema)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: %v, want an *Error", c.expr, err)
			continue
		}
		if e.Pos != c.pos || !strings.Contains(e.Msg, c.msg) {
			t.Errorf("%q: %q at %d, want %q at %d", c.expr, e.Msg, e.Pos, c.msg, c.pos)
		}
	}
	_, err := CompileFilter("n > 1 and nope = 2", testSchema)
	var ce *ColumnError
	if !errors.As(err, &ce) || ce.Column != "nope" {
		t.Fatalf("a missing column: %v, want a *ColumnError", err)
	}
}

func TestConjuncts(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"n > 1", "n > 1"},
		{"1 < n", "n > 1"},
		{"d <= '1998-09-02' and k = 'a'", "d <= 10471; k = a"},
		{"d between '1998-09-02' and '1998-09-03'", "d >= 10471; d <= 10472"},
		{"n in (1, 2) and x > -1.5", "n = 1 | n = 2; x > -1.5"},
		{"n = 1 or (k = 'a' and x > 2)", "n = 1 | k = a"},
		{"n = 1 || k = 'a'", "n = 1 | k = a"},
		{"n = 1 or n + 1 = 3", ""},
		{"not n = 1 and k is null", "k is null"},
		{"t >= date '2020-01-02'", "t >= 1577923200000000000"},
		{"d < timestamp '1998-09-02 10:00:00'", ""},
		{"d < d + 1", ""},
		{"n < 3 - 1", "n < 2"},
	} {
		e, err := CompileFilter(c.expr, testSchema)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		var parts []string
		for _, cj := range e.Conjuncts() {
			var ors []string
			for _, term := range cj {
				s := term.Column + " " + term.Op.String()
				switch term.Value.K {
				case KindInt, KindDate, KindTime:
					s += fmt.Sprint(" ", term.Value.I[0])
				case KindFloat:
					s += fmt.Sprint(" ", term.Value.F[0])
				case KindString:
					s += " " + term.Value.S(0)
				}
				ors = append(ors, s)
			}
			parts = append(parts, strings.Join(ors, " | "))
		}
		if got := strings.Join(parts, "; "); got != c.want {
			t.Errorf("%s: %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestParseList(t *testing.T) {
	items, err := ParseList("sum(x), count(*) as c, mean(n * 2)")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, String(it.Node)+"|"+it.As+"|"+it.Text)
	}
	want := "sum(x)||sum(x) count()|c|count(*) mean((n * 2))||mean(n * 2)"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, " "), want)
	}
}

func TestDecimals(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	dt := &arrow.Decimal128Type{Precision: 10, Scale: 2}
	sc := arrow.NewSchema([]arrow.Field{{Name: "price", Type: dt, Nullable: true}}, nil)
	b := array.NewDecimal128Builder(mem, dt)
	defer b.Release()
	for _, s := range []string{"1.25", "10.50", "-3.00"} {
		n, err := decimal128.FromString(s, 10, 2)
		if err != nil {
			t.Fatal(err)
		}
		b.Append(n)
	}
	b.AppendNull()
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 4)
	defer rec.Release()
	e, err := CompileFilter("price > 1.25 or price < -2", sc)
	if err != nil {
		t.Fatal(err)
	}
	if got := kept(evalOK(t, e, rec), 4); got != "1,2" {
		t.Fatalf("kept %q", got)
	}
}

// TestColumnNames: what a planner reads for an expression, from its text
// alone, is every column its compiled form reads (so nothing is left
// unread), and no other.
func TestColumnNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string
	}{
		{"n > 1", []string{"n"}},
		{"d between '1998-09-02' and t", []string{"d", "t"}},
		{"x * (1 - n) + abs(x) > 3 or k like 'a%'", []string{"x", "n", "k"}},
		{"not b and k in ('a', k) and t is not null", []string{"b", "k", "t"}},
		{"-x < n % 2", []string{"x", "n"}},
		{"starts_with(k, 'a') and d + interval '1' day > '2020-01-01'", []string{"k", "d"}},
		{"true", nil},
	} {
		n, err := Parse(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got := ColumnNames(n)
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: columns %q, want %q", c.expr, got, c.want)
		}
		e, err := Compile(c.expr, testSchema)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		for _, i := range e.Columns() {
			if name := testSchema.Field(i).Name; !strings.Contains(","+strings.Join(got, ",")+",", ","+name+",") {
				t.Errorf("%s: compiled, reads %s, which ColumnNames leaves out", c.expr, name)
			}
		}
	}
}

// evalOK is e over rec, failing the test on an error.
func evalOK(t *testing.T, e *Expr, rec arrow.RecordBatch) Vec {
	t.Helper()
	v, err := e.Eval(rec)
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	return v
}
