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

// TestPermSorted: rows already in the keys' order (an aggregation of
// input sorted by its keys) give the identity, and the same rows with
// two out of order are sorted.
func TestPermSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "b", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	for _, keys := range [][]SortKey{
		{{Column: "a"}}, {{Column: "a", Desc: true}},
		{{Column: "a"}, {Column: "b"}}, {{Column: "a"}, {Column: "b", Desc: true}}, {{Column: "a", Desc: true}, {Column: "b", Desc: true}},
	} {
		t.Run(fmt.Sprint(keys), func(t *testing.T) {
			mem := checkedMem(t)
			ob, err := newOrderBy("test", schema, keys)
			if err != nil {
				t.Fatal(err)
			}
			var rows [][]any
			for range 300 {
				rows = append(rows, []any{rng.IntN(40), rng.IntN(5)})
			}
			// Put the rows in the keys' order with a sort by compare.
			rec := batch(t, mem, schema, rows...)
			kv := ob.keys(rec)
			order := make([]int, len(rows))
			for i := range order {
				order[i] = i
			}
			slices.SortStableFunc(order, func(a, b int) int { return ob.compare(kv, a, kv, b) })
			sorted := make([][]any, len(rows))
			for i, o := range order {
				sorted[i] = rows[o]
			}
			rec.Release()
			// Then swap two neighbours with different keys.
			swapped := slices.Clone(sorted)
			for i := 100; ; i++ {
				if swapped[i][0] != swapped[i+1][0] || (len(keys) > 1 && swapped[i][1] != swapped[i+1][1]) {
					swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
					break
				}
			}
			for _, c := range []struct {
				name     string
				rows     [][]any
				identity bool
			}{{"sorted", sorted, true}, {"two swapped", swapped, false}} {
				rec := batch(t, mem, schema, c.rows...)
				kv := ob.keys(rec)
				want := make([]int32, rec.NumRows())
				for i := range want {
					want[i] = int32(i)
				}
				ident := slices.Clone(want)
				slices.SortStableFunc(want, func(a, b int32) int { return ob.compare(kv, int(a), kv, int(b)) })
				got := ob.perm(kv, int(rec.NumRows()))
				if !slices.Equal(got, want) {
					t.Errorf("%s: perm differs from a stable sort by compare", c.name)
				}
				if slices.Equal(got, ident) != c.identity {
					t.Errorf("%s: perm is the identity: %v, want %v", c.name, !c.identity, c.identity)
				}
				rec.Release()
			}
		})
	}
}
