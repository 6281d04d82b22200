package exec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestDictGroupRowsAsGeneral: the groups dictGroupRows finds (one and
// several dictionary key columns, with and without a keep mask) are those
// of the general path, key bytes and first-seen order alike; and it
// declines what is not all dictionaries, or too many combinations.
func TestDictGroupRowsAsGeneral(t *testing.T) {
	mem := checkedMem(t)
	r := rand.New(rand.NewPCG(9, 10))
	const n = 2000
	strs := func(values int) arrow.Array {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		for range n {
			b.Append(fmt.Sprint("v", r.IntN(values)))
		}
		return b.NewArray()
	}
	dict := func(values int) arrow.Array {
		b := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
		defer b.Release()
		for range n {
			b.AppendString(fmt.Sprint("d", r.IntN(values)))
		}
		return b.NewArray()
	}
	for _, c := range []struct {
		name string
		cols []arrow.Array
		want bool // dictGroupRows takes it
	}{
		{"dictionary", []arrow.Array{dict(7)}, true},
		{"two dictionaries", []arrow.Array{dict(3), dict(2)}, true},
		{"string and dictionary", []arrow.Array{strs(5), dict(4)}, false},
		{"too many combinations", []arrow.Array{dict(250), dict(250), dict(250)}, false},
	} {
		fields := make([]arrow.Field, len(c.cols))
		names := make([]string, len(c.cols))
		for i, a := range c.cols {
			names[i] = fmt.Sprint("k", i)
			fields[i] = arrow.Field{Name: names[i], Type: a.DataType()}
		}
		rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), c.cols, n)
		for _, a := range c.cols {
			a.Release()
		}
		enc, err := newKeyEncoder("test", rec.Schema(), names)
		if err != nil {
			t.Fatal(err)
		}
		for _, keep := range [][]bool{nil, randomKeep(r, n)} {
			gids, keys := make([]int32, n), []string(nil)
			took := dictGroupRows(enc, rec, keep, gids, &keys)
			if took != c.want {
				t.Fatalf("%s: took it %v, want %v", c.name, took, c.want)
			}
			if !took {
				continue
			}
			var kr keyRows
			enc.encode(rec, &kr)
			wantGids, wantKeys := make([]int32, n), []string(nil)
			groupRows(&kr, keep, wantGids, &wantKeys)
			if !slices.Equal(gids, wantGids) || !slices.Equal(keys, wantKeys) {
				t.Fatalf("%s (keep %v): groups %v keys %q; the general path: %v %q", c.name, keep != nil, gids[:10], keys, wantGids[:10], wantKeys)
			}
		}
		rec.Release()
	}
}

func randomKeep(r *rand.Rand, n int) []bool {
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = r.IntN(3) > 0
	}
	return keep
}
