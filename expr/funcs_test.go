package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// rowsText is an expression's value over the test batch, a row at a time
// as text (NULL for null): the value stored by Array and read back.
func rowsText(t *testing.T, mem memory.Allocator, input string) string {
	t.Helper()
	rec := testBatch(t, mem)
	defer rec.Release()
	e, err := Compile(input, testSchema)
	if err != nil {
		t.Fatalf("%s: %v", input, err)
	}
	var sc Scratch
	v, err := e.EvalScratch(rec, &sc)
	if err != nil {
		t.Fatalf("%s: %v", input, err)
	}
	if v.K != e.Kind {
		t.Fatalf("%s: a %s expression gave a %s", input, e.Kind, v.K)
	}
	a := Array(mem, v, int(rec.NumRows()))
	defer a.Release()
	if !arrow.TypeEqual(a.DataType(), e.DataType()) {
		t.Fatalf("%s: stored as %s", input, a.DataType())
	}
	out := make([]string, a.Len())
	for i := range out {
		j := at(v, i)
		switch {
		case a.IsNull(i) != !v.IsValid(j):
			t.Fatalf("%s: row %d null %v in the array, %v in the value", input, i, a.IsNull(i), !v.IsValid(j))
		case a.IsNull(i):
			out[i] = "NULL"
		default:
			out[i] = text(v, j)
		}
	}
	return strings.Join(out, "|")
}

// TestFunctions: each function over the test batch, whose rows are
// (apple, 1, 0.5, 1998-09-01, 2020-01-01 10:00:00, true), (banana, 2,
// 1.5, 1998-09-02, 2020-01-02, false), (cherry, 3, -2, 1998-09-03,
// 2020-01-03 23:59:59.5, true) and all null, with DuckDB's results.
func TestFunctions(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, c := range []struct{ expr, want string }{
		// case, cast, coalesce, nullif
		{"case when n = 1 then 'one' when n = 2 then 'two' else 'many' end", "one|two|many|many"},
		{"case when n = 1 then 'one' end", "one|NULL|NULL|NULL"},
		{"case n when 1 then x when 3 then 10 end", "0.5|NULL|10.0|NULL"},
		{"case when b then d else t end", "1998-09-01 00:00:00|2020-01-02 00:00:00|1998-09-03 00:00:00|NULL"},
		{"case when true then 1 else 2 end", "1|1|1|1"},
		{"case when n = 2 then null else k end", "apple|NULL|cherry|NULL"},
		{"case when n = 2 then x else null end", "NULL|1.5|NULL|NULL"},
		{"cast(x as integer)", "0|2|-2|NULL"},
		{"cast(2.5 as integer)", "3|3|3|3"},   // 2.5 is a decimal: rounded half away from zero
		{"cast(2.5e0 as integer)", "2|2|2|2"}, // a double: half to even
		{"cast(n as varchar) || '!'", "1!|2!|3!|NULL"},
		{"cast(x as varchar)", "0.5|1.5|-2.0|NULL"},
		{"cast(d as varchar)", "1998-09-01|1998-09-02|1998-09-03|NULL"},
		{"cast(t as varchar)", "2020-01-01 10:00:00|2020-01-02 00:00:00|2020-01-03 23:59:59.5|NULL"},
		{"cast(t as date)", "2020-01-01|2020-01-02|2020-01-03|NULL"},
		{"cast(d as timestamp)", "1998-09-01 00:00:00|1998-09-02 00:00:00|1998-09-03 00:00:00|NULL"},
		{"cast(b as integer)", "1|0|1|NULL"},
		{"cast(n as double) / 2", "0.5|1.0|1.5|NULL"},
		{"cast(n as boolean)", "true|true|true|NULL"},
		{"cast(k as integer)", "NULL|NULL|NULL|NULL"},
		{"cast('12' as integer) + n", "13|14|15|NULL"},
		{"cast('2020-02-03' as date)", "2020-02-03|2020-02-03|2020-02-03|2020-02-03"},
		{"cast('t' as boolean)", "true|true|true|true"},
		{"coalesce(n, 7)", "1|2|3|7"},
		{"coalesce(x, n, 0)", "0.5|1.5|-2.0|0.0"},
		{"coalesce(k, 'none')", "apple|banana|cherry|none"},
		{"nullif(n, 2)", "1|NULL|3|NULL"},
		{"nullif(k, 'apple')", "NULL|banana|cherry|NULL"},
		// strings
		{"upper(k)", "APPLE|BANANA|CHERRY|NULL"},
		{"lower('AbC')", "abc|abc|abc|abc"},
		{"length(k)", "5|6|6|NULL"},
		{"length('größe')", "5|5|5|5"},
		{"substring(k, 2)", "pple|anana|herry|NULL"},
		{"substring(k, 2, 3)", "ppl|ana|her|NULL"},
		{"substring(k, n, 2)", "ap|an|er|NULL"},
		{"substring(k, 0, 2)", "a|b|c|NULL"},
		{"substring(k, -3)", "ple|ana|rry|NULL"},
		{"substring(k, -3, 2)", "pl|an|rr|NULL"},
		{"substring(k, 10, 2)", "|||NULL"},
		{"substring('a', -2, 1)", "|||"},
		{"substring('abc', -4, 2)", "a|a|a|a"},
		{"substring('abcdef', 4, -2)", "bc|bc|bc|bc"},
		{"trim('  a b  ')", "a b|a b|a b|a b"},
		{"ltrim('xxaxx', 'x') || rtrim('xxaxx', 'x')", "axxxxa|axxxxa|axxxxa|axxxxa"},
		{"concat(k, '-', n)", "apple-1|banana-2|cherry-3|-"},
		{"concat(x, d)", "0.51998-09-01|1.51998-09-02|-2.01998-09-03|"},
		{"k || '-' || n", "apple-1|banana-2|cherry-3|NULL"},
		{"replace(k, 'an', 'AN')", "apple|bANANa|cherry|NULL"},
		{"strpos(k, 'an')", "0|2|0|NULL"},
		{"strpos('größe', 'e')", "5|5|5|5"},
		{"regexp_matches(k, 'an+a')", "false|true|false|NULL"},
		{"regexp_matches(k, '^A', 'i')", "true|false|false|NULL"},
		{"starts_with(k, 'b') || k = 'apple'", "true|true|false|NULL"},
		// dates and timestamps
		{"extract(year from d)", "1998|1998|1998|NULL"},
		{"extract(day from t)", "1|2|3|NULL"},
		{"extract(hour from t)", "10|0|23|NULL"},
		{"extract(second from t)", "0|0|59|NULL"},
		{"extract(dow from d)", "2|3|4|NULL"},
		{"extract('doy' from d)", "244|245|246|NULL"},
		{"extract(quarter from d)", "3|3|3|NULL"},
		{"extract(week from d)", "36|36|36|NULL"},
		{"year(t) * 100 + month(t)", "202001|202001|202001|NULL"},
		{"dayofweek(t)", "3|4|5|NULL"},
		{"date_part('minute', t)", "0|0|59|NULL"},
		{"extract(epoch from t) - 1577836800", "36000.0|86400.0|259199.5|NULL"},
		{"date_trunc('month', d)", "1998-09-01|1998-09-01|1998-09-01|NULL"},
		{"date_trunc('year', t)", "2020-01-01 00:00:00|2020-01-01 00:00:00|2020-01-01 00:00:00|NULL"},
		{"date_trunc('hour', t)", "2020-01-01 10:00:00|2020-01-02 00:00:00|2020-01-03 23:00:00|NULL"},
		{"date_trunc('week', d)", "1998-08-31|1998-08-31|1998-08-31|NULL"},
		{"date_diff('day', d, date '1998-09-10')", "9|8|7|NULL"},
		{"date_diff('month', date '2020-01-31', date '2020-02-01')", "1|1|1|1"},
		{"date_diff('year', d, t)", "22|22|22|NULL"},
		{"date_diff('week', d, date '1998-09-15')", "2|1|1|NULL"},
		{"date_diff('hour', t, timestamp '2020-01-04')", "62|48|1|NULL"},
		{"date '2020-01-31' + interval '1' month", "2020-02-29|2020-02-29|2020-02-29|2020-02-29"},
		{"d - interval '1' year", "1997-09-01|1997-09-02|1997-09-03|NULL"},
		{"interval '2' months + t", "2020-03-01 10:00:00|2020-03-02 00:00:00|2020-03-03 23:59:59.5|NULL"},
		{"d + interval '30' day", "1998-10-01|1998-10-02|1998-10-03|NULL"},
		// numbers
		{"round(x)", "1.0|2.0|-2.0|NULL"},
		{"round(-2.5)", "-3|-3|-3|-3"},
		{"round(x * 1.2345, 2)", "0.62|1.85|-2.47|NULL"},
		{"round(1234.5, -2)", "1200|1200|1200|1200"},
		{"round(n)", "1|2|3|NULL"},
		{"round(1250, -2)", "1300|1300|1300|1300"},
		{"floor(x)", "0.0|1.0|-2.0|NULL"},
		{"ceil(x)", "1.0|2.0|-2.0|NULL"},
		{"ceil(n)", "1|2|3|NULL"},
		{"sqrt(n * 4)", "2.0|2.8284271247461903|3.4641016151377544|NULL"},
		{"sqrt(x)", "0.7071067811865476|1.224744871391589|NULL|NULL"},
		{"ln(x)", "-0.6931471805599453|0.4054651081081644|NULL|NULL"},
		{"power(n, 2)", "1.0|4.0|9.0|NULL"},
		{"pow(2, x)", "1.4142135623730951|2.82842712474619|0.25|NULL"},
		{"mod(n, 2)", "1|0|1|NULL"},
		{"mod(n, 0)", "NULL|NULL|NULL|NULL"},
		{"mod(x, 1)", "0.5|0.5|-0.0|NULL"},
	} {
		if got := rowsText(t, mem, c.expr); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.expr, got, c.want)
		}
	}
}

// TestOverflow: a result past its type stops the evaluation with an
// error, as DuckDB stops, where a wrapped integer or a decimal that lost
// digits would be a wrong answer.
func TestOverflow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testBatch(t, mem)
	defer rec.Release()
	for _, c := range []struct{ expr, want string }{
		{"n + 9223372036854775807", "overflow in addition of BIGINT"},
		{"-n - 9223372036854775807 - 1", "overflow in subtraction of BIGINT"},
		{"n * 4611686018427387904 * 2", "overflow in multiplication of BIGINT"},
		{"(n + 4611686018427387903) * n", "overflow in multiplication of BIGINT"},
		{"-2 * (n + 4611686018427387903)", "overflow in multiplication of BIGINT"},
		{"(n - 3) * -9223372036854775807 * -1", "overflow in multiplication of BIGINT"},
		{"m * m", "overflow in multiplication of DECIMAL(18,4)"},
		{"w + w", "overflow in addition of DECIMAL(38,10)"},
	} {
		e, err := Compile(c.expr, testSchema)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		_, err = e.Eval(rec)
		var o *OverflowError
		if !errors.As(err, &o) || err.Error() != c.want+": cast to a wider type (a decimal of more digits, double)" {
			t.Errorf("%s: %v, want %s", c.expr, err, c.want)
		}
	}
	// Within range the same expressions hold: a null row's wrapped value
	// is not an overflow.
	for _, ok := range []string{"n + 9223372036854775804", "m * 3 + m", "w - w", "n * -3074457345618258602", "(n - 2) * -9223372036854775807", "(n + 2305843009213693950) * (4 - n)"} {
		e, err := Compile(ok, testSchema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Eval(rec); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestDecimalFromText: text becomes a decimal only when written as a
// number; a huge exponent or a fraction is null, not a power of ten
// built digit by digit.
func TestDecimalFromText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" for null
	}{
		{" 12.345 ", "12.35"}, {"-0.005", "-0.01"}, {"1e2", "100.00"}, {"+.5", "0.50"}, {"5.", "5.00"},
		{"1e999999999", ""}, {"1/3", ""}, {"1.2.3", ""}, {"", ""}, {".", ""}, {"1e", ""}, {"0x10", ""}, {"1e-999", "0.00"}, {"1e-1000", ""},
	} {
		n, ok := decOfString(c.in, Dec{10, 2})
		got := ""
		if ok {
			got = decText(n, 2)
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}

// TestReviewedDecimalCases: what a review of the decimal change found,
// each against DuckDB's answer.
func TestReviewedDecimalCases(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rec := testBatch(t, mem)
	defer rec.Release()
	// A filter's constant that overflows is no pruning term, and no panic:
	// the rows' evaluation reports it.
	for _, f := range []string{"n > 9223372036854775807 + 1", "w > 9999999999999999999999999999999999999.9 * 10"} {
		e, err := CompileFilter(f, testSchema)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Eval(rec); err == nil {
			t.Errorf("%s: no overflow", f)
		}
		_ = e.Conjuncts()
	}
	// The common type of DECIMAL(38,10) and DECIMAL(15,15) keeps w's 28
	// integer digits (DECIMAL(38,10)), as DuckDB; w's values are kept.
	e, err := Compile("coalesce(w, 0.123456789012345)", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	if e.Dec() != (Dec{38, 10}) {
		t.Errorf("coalesce's type %v, want decimal(38,10)", e.Dec())
	}
	v, err := e.Eval(rec)
	if err != nil || decText(v.D[1], 10) != "9999999999999999999999999999.9999999999" || decText(v.D[3], 10) != "0.1234567890" {
		t.Errorf("coalesce: %v %v", err, v.D)
	}
	// A value past the common type stops, as DuckDB's cast does.
	e, err = Compile("case when n > 1 then cast(x as decimal(38,20)) else 9223372036854775807 end", testSchema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Eval(rec); err == nil || !strings.Contains(err.Error(), "overflow in conversion") {
		t.Errorf("case into decimal(38,20): %v", err)
	}
	// NaN equals NaN and is greater than every number, as in DuckDB.
	for expr, want := range map[string]string{"(x * 0) / 0 > 1": "0,1,2", "(x * 0) / 0 = (x * 0) / 0": "0,1,2", "x % 0 > 1e308": "0,1,2", "(x * 0) / 0 < 1": ""} {
		e, err := CompileFilter(expr, testSchema)
		if err != nil {
			t.Fatal(err)
		}
		if got := kept(evalOK(t, e, rec), 4); got != want {
			t.Errorf("%s: kept %q, want %q", expr, got, want)
		}
	}
	// Wide decimals become floats as DuckDB divides them.
	n, _ := decimal128.FromString("12345678901234567890.1234567891", 38, 10)
	if f := DecFloat(n, 10); f != 1.2345678901234567e+19 {
		t.Errorf("DecFloat: %v, DuckDB 1.2345678901234567e+19", f)
	}
}
