package expr

import (
	"cmp"
	"errors"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FuzzExpr: any text parses or fails with an *Error pointing inside it
// (or just past its end); what parses prints as text that parses to the
// same expression; what binds evaluates without panicking, one value per
// row, and its conjuncts can be taken.
func FuzzExpr(f *testing.F) {
	for _, s := range []string{
		// exec's filter and agg-by seeds
		"x > 1", "k = 'a''b' and not n is null", "starts_with(k, 'ap') or -x * 2 <= n % 3",
		"n / 0 > 1", `"k" != 'x' || !(x >= 1.5e3)`, "date '2023-01-01' - 1 < date '2023-01-02'",
		"timestamp '2023-01-01 10:00:00' = timestamp '2023-01-01T10:00:00'", "((((x))))", "abs(-n) = 1",
		"sum(x), count(*) as c, mean(n * 2)", "count()", "x > (1 + )", "'unterminated", "1.5.5", "a.b.c",
		// scan's --filter seeds
		"a = 1", "l_shipdate >= '1994-01-01' and l_discount < 0.05", `"x y" <> 'it''s'`,
		"5 < x", "d < date '1998-09-02'", "a = true AND b != -1e-3", "a = 'open", "`q` >= .5",
		// the SQL additions
		"d <= '1998-09-02'", "n in (1, 2, 3) or k not like 'a_%'", "x not between -1 and 2.5",
		"d + interval '3' day >= '1998-09-02'", "t between '2020-01-01' and timestamp '2020-02-01 00:00:00'",
		"(n in (1, 2) or k = 'cherry') and x > -3 and d >= date '1998-09-02' and t < '2020-01-03' and b = true",
		"k is null or (n between 1 and 2 and not b)", "x >= 1.5 or k like 'ch%rry'", "n != 2 and b != false",
		// computed columns' functions
		"case when n = 1 then 'one' when n > 1 then k else 'x' end = k", "case n when 1 then x else 2 end > 0",
		"case when b then d else t end < t", "case when b then 1", "case n end", "cast(x as integer) = n",
		"cast(k as date) is null", "cast(n as varchar) || k = '1apple'", "cast(x as blob) = 1", "cast(x integer)",
		"coalesce(x, n, 0) > nullif(n, 2)", "upper(k) || lower(k) <> trim(k)", "length(substring(k, -3, 2)) = 2",
		"substring(k, 0) = concat(k, n, d, t, b, x)", "replace(k, 'a', '') = ltrim(rtrim(k, 'y'), 'b')",
		"strpos(k, 'an') > 0 and regexp_matches(k, '^b', 'i')", "regexp_matches(k, '(')",
		"extract(year from d) = 1998 and extract(hour from t) < 12", "extract(from d)", "extract(epoch from t) > 0",
		"year(d) + month(t) + day(d) + dayofweek(t) + quarter(d) + week(t) > 0",
		"date_trunc('month', d) = date_trunc('week', t)", "date_diff('day', d, t) > date_diff('month', t, d)",
		"d + interval '1' month > d - interval '2' years", "interval '1' month", "-interval '1' year < d",
		"round(x, 1) + floor(x) + ceil(n) + sqrt(x) + ln(x) + power(x, n) + mod(n, 2) > round(n)",
		"k || 'x' || n = 'applex1'", "case when case when b then true end then 1 else 0 end = 1",
		"case when b then null when n > 1 then d else null end < t", "case n when null then 1 end",
		// decimals
		"m * (1 - 0.05) * (1 + 0.08) > m", "w + w > w - m * 3", "m * m * m * m * m > 0", "w * w > 0",
		"round(m, 1) + round(w, -3) + floor(m) + ceil(w) > m % 7", "cast(m as decimal(5,1)) = cast(k as decimal(38,37))",
		"coalesce(m, n, w) = case when b then m else 1.5 end", "cast(w as integer) + cast(m as double) > 0",
		"m / 0 < m % 0 or 99999999999999999999999999999999999999.5 > -.5", "round(m, -2147483647) = round(w, 40)",
	} {
		f.Add(s)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	rec := testBatch(f, mem)
	f.Cleanup(func() {
		rec.Release()
		mem.AssertSize(f, 0)
	})
	f.Fuzz(func(t *testing.T, s string) {
		check := func(err error) {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%q: %v is not an *Error", s, err)
			}
			if n := utf8.RuneCountInString(s); e.Pos < 1 || e.Pos > n+1 {
				t.Fatalf("%q: position %d outside 1..%d", s, e.Pos, n+1)
			}
		}
		if _, err := ParseList(s); err != nil {
			check(err)
		}
		n, err := Parse(s)
		if err != nil {
			check(err)
			return
		}
		printed := String(n)
		again, err := Parse(printed)
		if err != nil && strings.Contains(err.Error(), "nested too deeply") {
			return // the printed form spends depth on parentheses
		}
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", s, printed, err)
		}
		if String(again) != printed {
			t.Fatalf("%q: printed %q, then %q", s, printed, String(again))
		}
		e, err := Bind(s, n, testSchema)
		if err != nil {
			check(err)
			return
		}
		v, err := e.Eval(rec)
		var overflow *OverflowError
		if errors.As(err, &overflow) {
			return // a decimal result past its precision: DuckDB's error too
		} else if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if v.K != e.Kind {
			t.Fatalf("%q: a %s expression gave a %s", s, e.Kind, v.K)
		}
		if !v.Const && e.Kind == KindBool && len(v.B) != int(rec.NumRows()) {
			t.Fatalf("%q: %d results for %d rows", s, len(v.B), rec.NumRows())
		}
		if e.Kind == KindBool {
			checkConjuncts(t, s, e, v, rec)
		}
		checkScratch(t, s, e, v, rec)
	})
}

// checkScratch: an evaluation into a Scratch that earlier evaluations
// left full of other values gives what Eval gives.
func checkScratch(t *testing.T, s string, e *Expr, want Vec, rec arrow.RecordBatch) {
	var sc Scratch
	e.EvalScratch(rec, &sc)
	for _, x := range sc.i {
		for j := range x[:cap(x)] {
			x[:cap(x)][j] = -7
		}
	}
	for _, x := range sc.f {
		for j := range x[:cap(x)] {
			x[:cap(x)][j] = math.NaN()
		}
	}
	for _, x := range sc.b {
		for j := range x[:cap(x)] {
			x[:cap(x)][j] = true
		}
	}
	for _, x := range sc.d {
		for j := range x[:cap(x)] {
			x[:cap(x)][j] = decimal128.New(-7, 7)
		}
	}
	got, err := e.EvalScratch(rec, &sc)
	if err != nil {
		t.Fatalf("%q: with a Scratch: %v", s, err)
	}
	if got.K != want.K || got.Const != want.Const {
		t.Fatalf("%q: with a Scratch a %s (const %v), without a %s (const %v)", s, got.K, got.Const, want.K, want.Const)
	}
	n := int(rec.NumRows())
	if want.Const {
		n = 1
	}
	for i := range n {
		if got.IsValid(i) != want.IsValid(i) {
			t.Fatalf("%q: row %d valid %v with a Scratch, %v without", s, i, got.IsValid(i), want.IsValid(i))
		}
		if !want.IsValid(i) {
			continue
		}
		same := true
		switch want.K {
		case KindBool:
			same = got.B[i] == want.B[i]
		case KindFloat:
			same = math.Float64bits(got.F[i]) == math.Float64bits(want.F[i])
		case KindString:
			same = got.S(i) == want.S(i)
		case KindDecimal:
			same = got.D[i] == want.D[i] && got.Dec == want.Dec
		default:
			same = got.I[i] == want.I[i]
		}
		if !same {
			t.Fatalf("%q: row %d differs with a Scratch", s, i)
		}
	}
}

// checkConjuncts: every row the filter keeps satisfies some term of
// every conjunct (what makes skipping by them safe).
func checkConjuncts(t *testing.T, s string, e *Expr, v Vec, rec arrow.RecordBatch) {
	conj := e.Conjuncts()
	for i := range int(rec.NumRows()) {
		j := i
		if v.Const {
			j = 0
		}
		if !v.B[j] || !v.IsValid(j) {
			continue
		}
		for _, c := range conj {
			holds := false
			for _, term := range c {
				holds = holds || termHolds(rec, term, i)
			}
			if !holds {
				t.Fatalf("%q keeps row %d, which no term of the conjunct %+v holds on", s, i, c)
			}
		}
	}
}

func termHolds(rec arrow.RecordBatch, term Term, i int) bool {
	col := rec.Column(rec.Schema().FieldIndices(term.Column)[0])
	_, load := Loader(col.DataType())
	x := load(col)
	switch term.Op {
	case OpIsNull:
		return !x.IsValid(i)
	case OpNotNull:
		return x.IsValid(i)
	}
	if !x.IsValid(i) {
		return false
	}
	var c int
	switch {
	case x.K == KindString:
		c = strings.Compare(x.S(i), term.Value.S(0))
	case x.K == KindFloat || term.Value.K == KindFloat:
		a, b := 0.0, 0.0
		if x.K == KindFloat {
			a = x.F[i]
		} else {
			a = float64(x.I[i])
		}
		if term.Value.K == KindFloat {
			b = term.Value.F[0]
		} else {
			b = float64(term.Value.I[0])
		}
		c = cmp.Compare(a, b)
	case x.K == KindBool:
		c = cmp.Compare(b2i(x.B[i]), b2i(term.Value.B[0]))
	default:
		c = cmp.Compare(x.I[i], term.Value.I[0])
	}
	return holds(opNames[term.Op], c)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
