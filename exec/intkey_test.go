package exec

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestIntKeysGroupAsBytes: grouping by one integer-like column's values
// gives the groups, key bytes and first-seen order of grouping by the
// encoded key bytes, for every width and kind of integer, with and
// without rows left out; a column with nulls, or two key columns, take
// the general path.
func TestIntKeysGroupAsBytes(t *testing.T) {
	mem := checkedMem(t)
	r := rand.New(rand.NewPCG(1, 2))
	const n = 5000
	vals := make([]int64, n)
	for i := range vals {
		switch {
		case i > 0 && r.IntN(3) == 0:
			vals[i] = vals[i-1] // runs, as sorted data has
		case r.IntN(10) == 0:
			vals[i] = -r.Int64N(100)
		default:
			vals[i] = r.Int64N(120)
		}
	}
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = r.IntN(4) != 0
	}
	// One scratch for every batch, as a worker keeps it: each must start
	// from an empty table.
	sc := &intGroups{}
	for _, dt := range []arrow.DataType{
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.FixedWidthTypes.Date32, arrow.FixedWidthTypes.Date64, arrow.FixedWidthTypes.Timestamp_us,
		arrow.FixedWidthTypes.Time32s, arrow.FixedWidthTypes.Time64ns, arrow.FixedWidthTypes.Duration_ms,
	} {
		schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: dt}, {Name: "j", Type: dt}}, nil)
		b := array.NewRecordBuilder(mem, schema)
		for c := range 2 {
			for _, v := range vals {
				if !appendInt(b.Field(c), v) {
					t.Fatalf("no builder for %s", dt)
				}
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		for _, kp := range [][]bool{nil, keep} {
			k, err := newKeyEncoder("test", schema, []string{"k"})
			if err != nil {
				t.Fatal(err)
			}
			want, wantKeys := make([]int32, n), []string(nil)
			kr := &keyRows{}
			k.encode(rec, kr)
			groupRows(kr, kp, want, &wantKeys)
			got, gotInts := make([]int32, n), []int64(nil)
			for _, s := range []*intGroups{sc, nil} {
				got, gotInts = make([]int32, n), nil
				if !intGroupRows(k, rec, kp, got, &gotInts, s) {
					t.Fatalf("%s: not grouped by value", dt)
				}
				if gotKeys := intKeyStrings(gotInts, 1); !slices.Equal(got, want) || !slices.Equal(gotKeys, wantKeys) {
					t.Fatalf("%s (keep %v, scratch %v): groups by value differ from groups by key bytes (%d and %d groups)", dt, kp != nil, s != nil, len(gotKeys), len(wantKeys))
				}
			}
			if len(wantKeys) < 20 {
				t.Fatalf("%s: only %d groups: the test data is too plain", dt, len(wantKeys))
			}
			two, err := newKeyEncoder("test", schema, []string{"k", "j"})
			if err != nil {
				t.Fatal(err)
			}
			if intGroupRows(two, rec, kp, got, &gotInts, sc) {
				t.Fatalf("%s: two key columns grouped by one's value", dt)
			}
		}
		rec.Release()
	}
	nulls := batch(t, mem, kvSchema, []any{"a", 1, 1.0}, []any{"b", nil, 2.0})
	defer nulls.Release()
	k, err := newKeyEncoder("test", kvSchema, []string{"n"})
	if err != nil {
		t.Fatal(err)
	}
	var keys []int64
	if intGroupRows(k, nulls, nil, make([]int32, 2), &keys, nil) || len(keys) != 0 {
		t.Fatal("a key column with nulls grouped by value")
	}
}
