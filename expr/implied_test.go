package expr

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestImplied(t *testing.T) {
	right := func(c string) bool { return strings.HasPrefix(c, "p_") }
	left := func(c string) bool { return !right(c) }
	for _, c := range []struct {
		where       string
		left, right string // "" for none
	}{
		{"l_q > 1 and p_size < 5", "(l_q > 1)", "(p_size < 5)"},
		{"l_q > p_size", "", ""},
		{"(p_b = 'x' and l_q < 3) or (p_b = 'y' and l_q > 7)", "((l_q < 3) or (l_q > 7))", "((p_b = 'x') or (p_b = 'y'))"},
		// An alternative that says nothing of a side leaves it nothing.
		{"(p_b = 'x' and l_q < 3) or l_q > 7", "((l_q < 3) or (l_q > 7))", ""},
		{"(p_b = 'x' and l_q < 3) or (l_q > p_size)", "", ""},
		{"not (p_b = 'x' and l_q < 3)", "", ""},
		{"p_b in ('a', 'b') and p_s between 1 and 5 and l_q + 1 > 3", "((l_q + 1) > 3)", "((p_b in ('a', 'b')) and (p_s between 1 and 5))"},
		{"true", "", ""},
	} {
		n, err := Parse(c.where)
		if err != nil {
			t.Fatal(err)
		}
		for _, side := range []struct {
			keep func(string) bool
			want string
		}{{left, c.left}, {right, c.right}} {
			got := ""
			if m := Implied(n, side.keep); m != nil {
				got = String(m)
				if _, err := Parse(got); err != nil {
					t.Errorf("%q: %q does not parse: %v", c.where, got, err)
				}
				for _, col := range ColumnNames(m) {
					if !side.keep(col) {
						t.Errorf("%q: %q reads %s", c.where, got, col)
					}
				}
			}
			if got != side.want {
				t.Errorf("%q: got %q, want %q", c.where, got, side.want)
			}
		}
	}
}

// TestImpliedHolds: over random rows (nulls among them), a row that
// TPC-H Q19's condition keeps is kept by what it implies of each side.
func TestImpliedHolds(t *testing.T) {
	const where = `(p_brand = 'b12' and p_container in ('SM CASE', 'SM BOX') and l_quantity >= 1 and l_quantity <= 1 + 10 and p_size between 1 and 5)
		or (p_brand = 'b23' and p_container in ('MED BAG', 'MED BOX') and l_quantity >= 10 and l_quantity <= 10 + 10 and p_size between 1 and 10)
		or (p_brand = 'b34' and l_quantity >= 20 and l_quantity <= 20 + 10 and p_size between 1 and 15 and l_discount < p_size)`
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "p_brand", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "p_container", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "p_size", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "l_quantity", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "l_discount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(3, 19))
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	const rows = 20000
	pick := func(fb array.Builder, vals ...string) {
		if rng.IntN(10) == 0 {
			fb.AppendNull()
			return
		}
		fb.(*array.StringBuilder).Append(vals[rng.IntN(len(vals))])
	}
	num := func(fb array.Builder, n int) {
		if rng.IntN(10) == 0 {
			fb.AppendNull()
			return
		}
		fb.(*array.Int64Builder).Append(int64(rng.IntN(n)))
	}
	for range rows {
		pick(b.Field(0), "b12", "b23", "b34", "b45")
		pick(b.Field(1), "SM CASE", "SM BOX", "MED BAG", "MED BOX", "LG BOX")
		num(b.Field(2), 20)
		num(b.Field(3), 40)
		num(b.Field(4), 20)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	n, err := Parse(where)
	if err != nil {
		t.Fatal(err)
	}
	eval := func(text string) []bool {
		e, err := CompileFilter(text, schema)
		if err != nil {
			t.Fatal(err)
		}
		v, err := e.Eval(rec)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]bool, rows)
		for i := range out {
			out[i] = v.IsValid(i) && (v.Const && v.B[0] || !v.Const && v.B[i])
		}
		return out
	}
	all := eval(where)
	kept := 0
	for _, prefix := range []string{"p_", "l_"} {
		m := Implied(n, func(c string) bool { return strings.HasPrefix(c, prefix) })
		if m == nil {
			t.Fatalf("nothing implied of %s", prefix)
		}
		side := eval(String(m))
		narrower := 0
		for i := range all {
			if all[i] && !side[i] {
				t.Fatalf("row %d: %s holds, %s does not", i, where, String(m))
			}
			if side[i] && !all[i] {
				narrower++
			}
			if all[i] {
				kept++
			}
		}
		if narrower == 0 {
			t.Errorf("%s: implies nothing more than the whole", String(m))
		}
	}
	if kept == 0 {
		t.Fatal("no row holds")
	}
}
