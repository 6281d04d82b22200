package scan

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseFilter(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a = 1", "a = 1"},
		{"a == 1", "a = 1"},
		{"a <> 1", "a != 1"},
		{"x>=-2.5", "x >= -2.5"},
		{"5 < x", "x > 5"},
		{"'b' >= name", "name <= 'b'"},
		{"l_shipdate >= '1994-01-01' AND l_discount < 0.05 and l_shipmode = 'AIR'",
			"l_shipdate >= '1994-01-01' and l_discount < 0.05 and l_shipmode = 'AIR'"},
		{`"my col" != 'it''s'`, `"my col" != 'it''s'`},
		{"`and` = true", `"and" = true`},
		{"d < date '1998-09-02'", "d < date '1998-09-02'"},
		{"flag = FALSE", "flag = false"},
		{"n = 1e6", "n = 1e6"},
		{"n = 9223372036854775807", "n = 9223372036854775807"},
		{"n = 9223372036854775808", "n = 9223372036854775808"},
	}
	for _, c := range cases {
		f, err := ParseFilter(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := f.String(); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseFilterLiterals(t *testing.T) {
	f, err := ParseFilter("a = 42 and b = 2.5 and c = 9223372036854775808 and d = 'x'")
	if err != nil {
		t.Fatal(err)
	}
	v := f.Terms
	if !v[0].Value.IsInt || v[0].Value.Int != 42 {
		t.Errorf("42: %+v", v[0].Value)
	}
	if v[1].Value.IsInt || v[1].Value.Float != 2.5 {
		t.Errorf("2.5: %+v", v[1].Value)
	}
	if v[2].Value.IsInt || v[2].Value.Float != 9223372036854775808 {
		t.Errorf("2^63: %+v", v[2].Value)
	}
	if v[3].Value.Kind != LitString || v[3].Value.Text != "x" || v[3].ValPos != 55 {
		t.Errorf("'x': %+v at %d", v[3].Value, v[3].ValPos)
	}
}

func TestParseFilterErrors(t *testing.T) {
	cases := []struct {
		in   string
		pos  int // 0-based; len(in) is the end
		want string
	}{
		{"", 0, "empty filter"},
		{"   ", 0, "empty filter"},
		{"a", 1, "expected a comparison"},
		{"a <", 3, `expected a column or a value after "<"`},
		{"a < 1 and", 9, `expected a comparison after "and"`},
		{"a < 1 or b > 2", 6, `"or" is not supported`},
		{"a < 1 b > 2", 6, `expected "and" or the end`},
		{"a < b", 4, "not with another column"},
		{"1 < 2", 0, "needs a column"},
		{"a = 'open", 4, "unterminated ' quote"},
		{`"" = 1`, 0, "empty column name"},
		{"a = 12abc", 4, "not a number"},
		{"a = 1e999", 4, "out of range"},
		{"a ~ 1", 2, "unexpected character"},
		{"a = date 5", 9, "'YYYY-MM-DD' after date"},
		{"a = date '1998-13-01'", 9, "not a date"},
		{"a = null", 4, `keyword "null"`},
		{"a = = 1", 4, `got "="`},
	}
	for _, c := range cases {
		_, err := ParseFilter(c.in)
		var fe *FilterError
		if !errors.As(err, &fe) {
			t.Errorf("%q: got %v, want a *FilterError", c.in, err)
			continue
		}
		if fe.Pos != c.pos || !strings.Contains(fe.Msg, c.want) {
			t.Errorf("%q: got %q at %d, want %q at %d", c.in, fe.Msg, fe.Pos, c.want, c.pos)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error is not one line: %q", c.in, err)
		}
	}
}

func TestFilterErrorPosition(t *testing.T) {
	_, err := ParseFilter("größe < x")
	if err == nil || !strings.Contains(err.Error(), "at position 9") {
		t.Fatalf("want the position in runes, got %v", err)
	}
	_, err = ParseFilter("a <")
	if err == nil || !strings.Contains(err.Error(), "at the end") {
		t.Fatalf("want 'at the end', got %v", err)
	}
}

// FuzzParseFilter: any input parses or fails with a *FilterError pointing
// inside it, never panics, and what parses prints as a filter that parses
// to the same thing.
func FuzzParseFilter(f *testing.F) {
	for _, s := range []string{
		"a = 1", "l_shipdate >= '1994-01-01' and l_discount < 0.05", `"x y" <> 'it''s'`,
		"5 < x", "d < date '1998-09-02'", "a = true AND b != -1e-3", "a = 'open", "`q` >= .5",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := ParseFilter(s)
		if err != nil {
			var fe *FilterError
			if !errors.As(err, &fe) {
				t.Fatalf("%q: %T %v", s, err, err)
			}
			if fe.Pos < 0 || fe.Pos > len(s) {
				t.Fatalf("%q: position %d out of range", s, fe.Pos)
			}
			if !utf8.ValidString(s) {
				return
			}
			if strings.Contains(err.Error(), "\n") && !strings.Contains(s, "\n") {
				t.Fatalf("%q: error not one line: %q", s, err)
			}
			return
		}
		again, err := ParseFilter(flt.String())
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", s, flt.String(), err)
		}
		if again.String() != flt.String() {
			t.Fatalf("%q: %q then %q", s, flt.String(), again.String())
		}
	})
}
