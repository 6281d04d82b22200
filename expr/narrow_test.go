package expr

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestNarrowComparisons checks comparisons of int32 and date32 columns,
// which read the values as they are (narrowComparison), row by row
// against Go's comparison of the values: with each other, with
// constants in and past their range, and with a date range's end
// folded into a constant; over plain columns and sliced ones (their
// values then start past the buffer's first), with nulls.
func TestNarrowComparisons(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := rand.New(rand.NewPCG(9, 10))
	const n = 400
	vals := make([][]int32, 4)
	valid := make([][]bool, 4)
	for c := range vals {
		vals[c], valid[c] = make([]int32, n), make([]bool, n)
		for i := range n {
			vals[c][i] = int32(8766 + r.IntN(800)) // days around 1994
			if c < 2 {
				vals[c][i] = int32(r.IntN(7)) - 3
				if r.IntN(30) == 0 {
					vals[c][i] = 1<<31 - 1
				}
			}
			valid[c][i] = r.IntN(6) > 0
		}
	}
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	db := array.NewDate32Builder(mem)
	defer db.Release()
	cols := make([]arrow.Array, 4)
	for c := range cols {
		if c < 2 {
			ib.AppendValues(vals[c], valid[c])
			cols[c] = ib.NewArray()
		} else {
			for i, v := range vals[c] {
				if valid[c][i] {
					db.Append(arrow.Date32(v))
				} else {
					db.AppendNull()
				}
			}
			cols[c] = db.NewArray()
		}
		defer cols[c].Release()
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "e", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	const jan94, jan95, mar94 = 8766, 9131, 8825
	cases := []struct {
		expr string
		x, y int // columns compared; y -1 for the constant c
		c    int64
		op   string
	}{
		{"a < b", 0, 1, 0, "<"},
		{"a = b", 0, 1, 0, "="},
		{"a != 2", 0, -1, 2, "!="},
		{"2 > a", 0, -1, 2, "<"},
		{"a >= 2147483647", 0, -1, 1<<31 - 1, ">="},
		{"a < 3000000000", 0, -1, 3000000000, "<"}, // past int32: widened
		{"a > -3000000000", 0, -1, -3000000000, ">"},
		{"d < e", 2, 3, 0, "<"},
		{"d <= e", 2, 3, 0, "<="},
		{"d >= date '1994-01-01'", 2, -1, jan94, ">="},
		{"d < date '1994-01-01' + interval '1' year", 2, -1, jan95, "<"},
		{"d < '1994-03-01'", 2, -1, mar94, "<"},
		{"date '1993-12-01' + interval '3' month > e", 3, -1, mar94, "<"},
	}
	holds := func(op string, x, y int64) bool {
		switch op {
		case "<":
			return x < y
		case "<=":
			return x <= y
		case ">":
			return x > y
		case ">=":
			return x >= y
		case "=":
			return x == y
		}
		return x != y
	}
	for _, from := range []int{0, 9} {
		sliced := make([]arrow.Array, 4)
		for c := range cols {
			sliced[c] = array.NewSlice(cols[c], int64(from), n)
			defer sliced[c].Release()
		}
		rec := array.NewRecordBatch(schema, sliced, int64(n-from))
		for _, c := range cases {
			e, err := CompileFilter(c.expr, schema)
			if err != nil {
				t.Fatalf("%s: %v", c.expr, err)
			}
			v, err := e.Eval(rec)
			if err != nil {
				t.Fatalf("%s: %v", c.expr, err)
			}
			for i := range n - from {
				j := from + i
				ok := valid[c.x][j] && (c.y < 0 || valid[c.y][j])
				if !ok {
					if v.IsValid(i) {
						t.Fatalf("%s from %d, row %d: a null gave a value", c.expr, from, i)
					}
					continue
				}
				y := c.c
				if c.y >= 0 {
					y = int64(vals[c.y][j])
				}
				if want := holds(c.op, int64(vals[c.x][j]), y); !v.IsValid(i) || v.B[i] != want {
					t.Fatalf("%s from %d, row %d (%d vs %d): %v, want %v", c.expr, from, i, vals[c.x][j], y, v.B[i], want)
				}
			}
		}
		rec.Release()
	}
	// A batch of no rows whose arrays have no value buffers (a builder
	// that appended nothing makes them so).
	empty := make([]arrow.Array, 4)
	ib2, db2 := array.NewInt32Builder(mem), array.NewDate32Builder(mem)
	for c := range empty {
		if c < 2 {
			empty[c] = ib2.NewArray()
		} else {
			empty[c] = db2.NewArray()
		}
		defer empty[c].Release()
	}
	ib2.Release()
	db2.Release()
	none := array.NewRecordBatch(schema, empty, 0)
	for _, c := range cases {
		e, err := CompileFilter(c.expr, schema)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := e.Eval(none); err != nil || len(v.B) != 0 && !v.Const {
			t.Fatalf("%s over no rows: %v, %v", c.expr, v, err)
		}
	}
	none.Release()
	// The ends of date ranges are constants once compiled; an overflow
	// is left to the evaluation, which reports it.
	for s, konst := range map[string]bool{
		"date '1994-01-01' + interval '1' year": true, "date '1994-01-01' + interval '3' day": true,
		"d + interval '1' year": false, "9223372036854775807 + 1": false,
	} {
		c := &compiler{input: s, schema: schema, cols: map[int]bool{}}
		node, err := Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		x, err := c.compile(node)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if (x.konst != nil) != konst {
			t.Errorf("%s: constant %v, want %v", s, x.konst != nil, konst)
		}
	}
	e, err := Compile("9223372036854775807 + 1", schema)
	if err != nil {
		t.Fatal(err)
	}
	rec := array.NewRecordBatch(schema, cols, n)
	defer rec.Release()
	if _, err := e.Eval(rec); err == nil {
		t.Error("an overflow of constants gave no error")
	}
}
