package expr

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestStringComparisons checks comparisons of a string column with a
// constant and in-lists of constants, which read the column's bytes
// directly, row by row against Go's own comparison of the values: over
// a plain column, the same column sliced (its offsets then start past
// zero) and as a dictionary (read through its values), with nulls and
// empty strings.
func TestStringComparisons(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(5, 6))
	words := []string{"", "a", "ab", "abc", "b", "ba", "é", "MED BOX", "MED BAG"}
	const n = 300
	vals, valid := make([]string, n), make([]bool, n)
	for i := range vals {
		vals[i], valid[i] = words[r.IntN(len(words))], r.IntN(5) > 0
	}
	sb := array.NewStringBuilder(mem)
	sb.AppendValues(vals, valid)
	plain := sb.NewArray()
	sb.Release()
	defer plain.Release()
	db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String})
	for i, v := range vals {
		if valid[i] {
			db.(*array.BinaryDictionaryBuilder).AppendString(v)
		} else {
			db.AppendNull()
		}
	}
	dict := db.NewArray()
	db.Release()
	defer dict.Release()

	type form struct {
		name string
		col  arrow.Array
		from int // the first row of vals it holds
	}
	sliced := array.NewSlice(plain, 7, n)
	defer sliced.Release()
	forms := []form{{"plain", plain, 0}, {"sliced", sliced, 7}, {"dictionary", dict, 0}}
	ten := []string{"a", "b", "c", "d", "e", "f", "g", "h", "ab", "MED BOX"}
	quote := func(ws []string) string {
		q := make([]string, len(ws))
		for i, w := range ws {
			q[i] = "'" + w + "'"
		}
		return strings.Join(q, ", ")
	}
	in := func(ws []string) func(string) bool {
		return func(v string) bool {
			for _, w := range ws {
				if v == w {
					return true
				}
			}
			return false
		}
	}
	cases := []struct {
		expr string
		want func(string) bool
	}{
		{"k = 'ab'", func(v string) bool { return v == "ab" }},
		{"k != 'ab'", func(v string) bool { return v != "ab" }},
		{"k = ''", func(v string) bool { return v == "" }},
		{"k < 'b'", func(v string) bool { return v < "b" }},
		{"k >= 'ab'", func(v string) bool { return v >= "ab" }},
		{"'ab' > k", func(v string) bool { return "ab" > v }},
		{"k in ('a', 'ab', '')", in([]string{"a", "ab", ""})},
		{"k not in ('MED BOX', 'MED BAG')", func(v string) bool { return !in([]string{"MED BOX", "MED BAG"})(v) }},
		{"k in (" + quote(ten) + ")", in(ten)},
		{"k not in (" + quote(ten) + ")", func(v string) bool { return !in(ten)(v) }},
	}
	for _, f := range forms {
		schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: f.col.DataType(), Nullable: true}}, nil)
		rec := array.NewRecordBatch(schema, []arrow.Array{f.col}, int64(f.col.Len()))
		for _, c := range cases {
			e, err := CompileFilter(c.expr, schema)
			if err != nil {
				t.Fatalf("%s: %v", c.expr, err)
			}
			v, err := e.Eval(rec)
			if err != nil {
				t.Fatalf("%s: %v", c.expr, err)
			}
			for i := range f.col.Len() {
				j := f.from + i
				if !valid[j] {
					if v.IsValid(i) {
						t.Fatalf("%s, %s, row %d: null %q gave a value", f.name, c.expr, i, vals[j])
					}
					continue
				}
				if !v.IsValid(i) || v.B[i] != c.want(vals[j]) {
					t.Fatalf("%s, %s, row %d (%q): %v (valid %v), want %v", f.name, c.expr, i, vals[j], v.B[i], v.IsValid(i), c.want(vals[j]))
				}
			}
		}
		rec.Release()
	}
}
