package exec

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// FuzzExpr: any text either parses or fails with a ParseError pointing
// inside it (or just past its end); what parses compiles or fails
// cleanly, and what compiles evaluates without panicking.
func FuzzExpr(f *testing.F) {
	for _, s := range []string{
		"x > 1", "k = 'a''b' and not n is null", "starts_with(k, 'ap') or -x * 2 <= n % 3",
		"n / 0 > 1", `"k" != 'x' || !(x >= 1.5e3)`, "date '2023-01-01' - 1 < date '2023-01-02'",
		"timestamp '2023-01-01 10:00:00' = timestamp '2023-01-01T10:00:00'", "((((x))))", "abs(-n) = 1",
		"sum(x), count(*) as c, mean(n * 2)", "count()", "x > (1 + )", "'unterminated", "1.5.5", "a.b.c",
	} {
		f.Add(s)
	}
	mem := memory.NewGoAllocator()
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) error{
			func(s string) error { _, err := parseExpr(s); return err },
			func(s string) error { _, err := parseAggs(s); return err },
		} {
			err := parse(s)
			if err == nil {
				continue
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("%q: %v is not a ParseError", s, err)
			}
			if n := utf8.RuneCountInString(s); pe.Pos < 1 || pe.Pos > n+1 {
				t.Fatalf("%q: position %d outside 1..%d", s, pe.Pos, n+1)
			}
		}
		c, err := compileExpr("filter", s, kvSchema)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: %v is not ErrInvalid", s, err)
			}
			return
		}
		b := batch(t, mem, kvSchema, []any{"a", 1, 1.5}, []any{nil, 0, nil}, []any{"b", nil, -0.0})
		defer b.Release()
		v := c.eval(b)
		if !v.konst && c.k == kBool && len(v.b) != 3 {
			t.Fatalf("%q: %d results for 3 rows", s, len(v.b))
		}
	})
}
