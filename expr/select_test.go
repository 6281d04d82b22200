package expr

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestSelectiveLogic checks and, or and not over string tests, which an
// and or or evaluates only on the rows its first operand left undecided
// (compiled.sel), and whose order an and changes, against SQL's
// three-valued logic evaluated here row by row, over random data with
// nulls and random expressions several levels deep, batch after batch on
// one Scratch.
func TestSelectiveLogic(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "u", Type: arrow.BinaryTypes.String},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "y", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	r := rand.New(rand.NewPCG(7, 11))
	words := []string{"a", "ab", "b", "bb", "ba", "c", ""}

	// A leaf is its text and its three-valued value for a row (0 false,
	// 1 true, 2 null).
	type leaf struct {
		text string
		val  func(row) int
	}
	tri := func(ok, v bool) int {
		switch {
		case !ok:
			return 2
		case v:
			return 1
		}
		return 0
	}
	leaves := []leaf{
		{"s in ('a', 'bb')", func(w row) int { return tri(w.sOK, w.s == "a" || w.s == "bb") }},
		{"s not in ('c', '')", func(w row) int { return tri(w.sOK, w.s != "c" && w.s != "") }},
		{"s like 'b%'", func(w row) int { return tri(w.sOK, strings.HasPrefix(w.s, "b")) }},
		{"u not like '%a%'", func(w row) int { return tri(true, !strings.Contains(w.u, "a")) }},
		{"s = u", func(w row) int { return tri(w.sOK, w.s == w.u) }},
		{"s < 'b'", func(w row) int { return tri(w.sOK, w.s < "b") }},
		{"u <> 'ab'", func(w row) int { return tri(true, w.u != "ab") }},
		{"starts_with(u, 'b')", func(w row) int { return tri(true, strings.HasPrefix(w.u, "b")) }},
		{"regexp_matches(s, 'a$')", func(w row) int { return tri(w.sOK, strings.HasSuffix(w.s, "a")) }},
		{"x > 3", func(w row) int { return tri(w.xOK, w.x > 3) }},
		{"y <= 5", func(w row) int { return tri(true, w.y <= 5) }},
		{"x = y", func(w row) int { return tri(w.xOK, w.x == w.y) }},
		{"y in (1, 2, 8)", func(w row) int { return tri(true, w.y == 1 || w.y == 2 || w.y == 8) }},
	}
	and3 := func(a, b int) int { return logic3(true, a, b) }
	or3 := func(a, b int) int { return logic3(false, a, b) }
	not3 := func(a int) int {
		if a == 2 {
			return 2
		}
		return 1 - a
	}
	var gen func(depth int) leaf
	gen = func(depth int) leaf {
		if depth == 0 || r.IntN(4) == 0 {
			return leaves[r.IntN(len(leaves))]
		}
		switch r.IntN(5) {
		case 0:
			x := gen(depth - 1)
			return leaf{"not (" + x.text + ")", func(w row) int { return not3(x.val(w)) }}
		case 1:
			x, y := gen(depth-1), gen(depth-1)
			return leaf{"(" + x.text + ") or (" + y.text + ")", func(w row) int { return or3(x.val(w), y.val(w)) }}
		default: // chains of ands, the order of which is changed
			x, y, z := gen(depth-1), gen(depth-1), gen(depth-1)
			return leaf{"(" + x.text + ") and (" + y.text + ") and (" + z.text + ")", func(w row) int { return and3(and3(x.val(w), y.val(w)), z.val(w)) }}
		}
	}

	var s Scratch
	for range 60 {
		e := gen(3)
		c, err := CompileFilter(e.text, schema)
		if err != nil {
			t.Fatalf("%s: %v", e.text, err)
		}
		for _, shape := range []struct {
			n    int
			dict bool
		}{{1, false}, {9, false}, {200, false}, {1, true}, {5, true}, {9, true}, {200, true}} {
			n := shape.n
			rows := make([]row, n)
			sb, ub := array.NewStringBuilder(mem), array.NewStringBuilder(mem)
			xb, yb := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
			for i := range rows {
				w := row{s: words[r.IntN(len(words))], sOK: r.IntN(5) > 0, u: words[r.IntN(len(words))], x: r.Int64N(8), xOK: r.IntN(5) > 0, y: r.Int64N(9)}
				rows[i] = w
				if w.sOK {
					sb.Append(w.s)
				} else {
					sb.AppendNull()
				}
				ub.Append(w.u)
				if w.xOK {
					xb.Append(w.x)
				} else {
					xb.AppendNull()
				}
				yb.Append(w.y)
			}
			cols := []arrow.Array{sb.NewArray(), ub.NewArray(), xb.NewArray(), yb.NewArray()}
			for _, b := range []interface{ Release() }{sb, ub, xb, yb} {
				b.Release()
			}
			sc := schema
			if shape.dict {
				// s as a reader may hand it over: a dictionary of every
				// word (more entries than rows when n is small), a null
				// row's index any value, one out of range too.
				cols[0].Release()
				cols[0] = dictOf(mem, rows, words, r)
				fields := schema.Fields()
				fields[0].Type = cols[0].DataType()
				sc = arrow.NewSchema(fields, nil)
			}
			rec := array.NewRecordBatch(sc, cols, int64(n))
			for _, a := range cols {
				a.Release()
			}
			v, err := c.EvalScratch(rec, &s)
			if err != nil {
				t.Fatalf("%s: %v", e.text, err)
			}
			for i, w := range rows {
				j := i
				if v.Const {
					j = 0
				}
				got := tri(v.IsValid(j), v.B[j])
				if want := e.val(w); got != want {
					t.Fatalf("%s, row %d of %d %+v: got %d, want %d", e.text, i, n, w, got, want)
				}
			}
			rec.Release()
		}
	}
}

// row is a row of TestSelectiveLogic's batch; a null is ok false.
type row struct {
	s   string
	sOK bool
	u   string
	x   int64
	xOK bool
	y   int64
}

// dictOf is column s of rows as a dictionary of words.
func dictOf(mem memory.Allocator, rows []row, words []string, r *rand.Rand) arrow.Array {
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	for _, w := range rows {
		ib.Append(int32(slices.Index(words, w.s)))
	}
	idx := ib.NewInt32Array()
	defer idx.Release()
	// The nulls, with an index of any value, in a validity of their own.
	valid := memory.NewResizableBuffer(mem)
	defer valid.Release()
	valid.Resize(int(bitutil.BytesForBits(int64(len(rows)))))
	nulls := 0
	vals := idx.Int32Values()
	for i, w := range rows {
		if w.sOK {
			bitutil.SetBit(valid.Bytes(), i)
		} else {
			vals[i] = int32(r.IntN(2 * len(words)))
			bitutil.ClearBit(valid.Bytes(), i)
			nulls++
		}
	}
	data := array.NewData(arrow.PrimitiveTypes.Int32, len(rows), []*memory.Buffer{valid, idx.Data().Buffers()[1]}, nil, nulls, 0)
	defer data.Release()
	withNulls := array.NewInt32Data(data)
	defer withNulls.Release()
	db := array.NewStringBuilder(mem)
	defer db.Release()
	db.AppendValues(words, nil)
	dict := db.NewArray()
	defer dict.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, withNulls, dict)
}

// TestDictNullEntries: a row of a dictionary column whose entry is null
// is null, as a row whose index is.
func TestDictNullEntries(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	db := array.NewStringBuilder(mem)
	defer db.Release()
	db.AppendValues([]string{"a", "", "b"}, []bool{true, false, true})
	dict := db.NewArray()
	defer dict.Release()
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	ib.AppendValues([]int32{0, 1, 2, 1, 0}, []bool{true, true, true, true, false})
	idx := ib.NewArray()
	defer idx.Release()
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	col := array.NewDictionaryArray(dt, idx, dict)
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: dt, Nullable: true}}, nil), []arrow.Array{col}, 5)
	defer rec.Release()
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	for _, c := range []struct{ expr, want string }{
		{"s = 'a'", "0"},
		{"s is null", "1,3,4"},
		{"s in ('b', '')", "2"},
	} {
		e, err := CompileFilter(c.expr, sc)
		if err != nil {
			t.Fatal(err)
		}
		if got := kept(evalOK(t, e, rec), 5); got != c.want {
			t.Errorf("%s: kept %q, want %q", c.expr, got, c.want)
		}
	}
}
