package exec

import (
	"slices"
	"testing"
)

// TestAggWhole: agg is one row over the whole input, and one row (count
// 0, the others null) over none; fused on any number of workers, piped,
// and split in partial and final sides alike.
func TestAggWhole(t *testing.T) {
	mem := checkedMem(t)
	must := mustStage(t)
	rec := batch(t, mem, kvSchema, []any{"a", 1, 1.5}, []any{"b", nil, 2.5}, []any{"a", 3, nil})
	defer rec.Release()
	agg := func() Stage { return must(aggAll("count() as n, sum(n) as s, min(k) as m, mean(x) as x")) }
	for _, c := range []struct {
		name   string
		filter string
		want   []string
	}{
		{"rows", "n is null or n > 0", []string{"3|4|a|2"}},
		{"none", "n > 100", []string{"0|(null)|(null)|(null)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			one := fused(t, mem, 1, FromBatches(kvSchema, rec), must(Filter(c.filter)), agg())
			if got := table(t, one); !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if many := fused(t, mem, 3, FromBatches(kvSchema, rec), must(Filter(c.filter)), agg()); !slices.Equal(one, many) {
				t.Error("three workers give other bytes")
			}
			if p := piped(t, mem, FromBatches(kvSchema, rec), must(Filter(c.filter)), agg()); !slices.Equal(one, p) {
				t.Error("piped gives other bytes")
			}
			partial, final, ok := splitAgg(agg())
			if !ok {
				t.Fatal("agg does not split")
			}
			if split := fused(t, mem, 2, FromBatches(kvSchema, rec), must(Filter(c.filter)), partial, final); !slices.Equal(table(t, split), c.want) {
				t.Errorf("partial and final: %q", table(t, split))
			}
		})
	}
}
