package exec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestPermAsCompare: the order perm gives one or two integer keys by
// their values is compare's, ties in row order, in either direction, and
// with nulls or the smallest int64 (which take compare's way).
func TestPermAsCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 12))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	for _, c := range []struct {
		name  string
		value func() any
	}{
		{"small", func() any { return rng.IntN(7) - 3 }},
		{"wide", func() any { return int(rng.Int64()) }},
		{"nulls", func() any {
			if rng.IntN(5) == 0 {
				return nil
			}
			return rng.IntN(7)
		}},
		{"smallest", func() any { return []int{math.MinInt64, math.MaxInt64, 0, -1}[rng.IntN(4)] }},
	} {
		mem := checkedMem(t)
		var rows [][]any
		for range 500 {
			rows = append(rows, []any{c.value(), c.value()})
		}
		rec := batch(t, mem, schema, rows...)
		for _, keys := range [][]SortKey{
			{{Column: "a"}}, {{Column: "a", Desc: true}},
			{{Column: "a"}, {Column: "b", Desc: true}}, {{Column: "b", Desc: true}, {Column: "a", Desc: true}},
		} {
			t.Run(fmt.Sprintf("%s/%v", c.name, keys), func(t *testing.T) {
				ob, err := newOrderBy("test", schema, keys)
				if err != nil {
					t.Fatal(err)
				}
				kv := ob.keys(rec)
				want := make([]int32, rec.NumRows())
				for i := range want {
					want[i] = int32(i)
				}
				slices.SortStableFunc(want, func(a, b int32) int { return ob.compare(kv, int(a), kv, int(b)) })
				if got := ob.perm(kv, int(rec.NumRows())); !slices.Equal(got, want) {
					t.Errorf("perm differs from a stable sort by compare")
				}
			})
		}
		rec.Release()
	}
}
