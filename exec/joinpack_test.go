package exec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestJoinPackedKeys: a join on three integer keys, of different widths
// on its two sides,
// packed into one int64 (keyPack) when their spans allow it and hashed
// as bytes when not, gives every kind of join's rows as a loop over
// every pair does, with null keys, negative keys and left keys outside
// the right side's ranges.
func TestJoinPackedKeys(t *testing.T) {
	left := arrow.NewSchema([]arrow.Field{
		{Name: "k1", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "k2", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "k3", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "a", Type: arrow.BinaryTypes.String},
	}, nil)
	right := arrow.NewSchema([]arrow.Field{
		{Name: "r1", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "r2", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "r3", Type: arrow.PrimitiveTypes.Uint16},
		{Name: "b", Type: arrow.BinaryTypes.String},
	}, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	type row struct{ k [3]any }
	str := func(v any) string {
		if v == nil {
			return "(null)"
		}
		return fmt.Sprint(v)
	}
	for _, c := range []struct {
		name   string
		k2     func(right bool) int // the second key's values
		packed bool
	}{
		{"packed", func(right bool) int {
			if right {
				return 1_000_000_000_000 + rng.IntN(6)
			}
			return 1_000_000_000_000 - 2 + rng.IntN(10) // some outside the right side's range
		}, true},
		{"too wide to pack", func(bool) int { return []int{-1 << 62, 0, 1 << 62}[rng.IntN(3)] }, false},
	} {
		gen := func(n int, right bool) []row {
			rows := make([]row, n)
			for i := range rows {
				k1 := rng.IntN(9) - 4 // -4..4
				if right {
					k1 = rng.IntN(7) - 3 // -3..3: left keys beyond it match nothing
				}
				rows[i].k = [3]any{k1, c.k2(right), rng.IntN(3)}
				if rng.IntN(8) == 0 {
					rows[i].k[rng.IntN(2)] = nil
				}
			}
			return rows
		}
		lrows, rrows := gen(300, false), gen(200, true)
		cells := func(rows []row, tag string) [][]any {
			var out [][]any
			for i, r := range rows {
				out = append(out, []any{r.k[0], r.k[1], r.k[2], fmt.Sprintf("%s%d", tag, i)})
			}
			return out
		}
		mem := checkedMem(t)
		var lrecs, rrecs []arrow.RecordBatch
		defer func() { releaseAll(lrecs); releaseAll(rrecs) }()
		lc, rc := cells(lrows, "l"), cells(rrows, "r")
		for lo := 0; lo < len(lc); lo += 70 {
			lrecs = append(lrecs, batch(t, mem, left, lc[lo:min(lo+70, len(lc))]...))
		}
		for lo := 0; lo < len(rc); lo += 50 {
			rrecs = append(rrecs, batch(t, mem, right, rc[lo:min(lo+50, len(rc))]...))
		}
		lk, err := newKeyEncoder("left", left, []string{"k1", "k2", "k3"})
		if err != nil {
			t.Fatal(err)
		}
		rk, err := newKeyEncoder("right", right, []string{"r1", "r2", "r3"})
		if err != nil {
			t.Fatal(err)
		}
		if got := newKeyPack(rrecs, lk, rk) != nil; got != c.packed {
			t.Fatalf("%s: packed %v, want %v", c.name, got, c.packed)
		}
		eq := func(l, r row) bool {
			for i := range 3 {
				if l.k[i] == nil || r.k[i] == nil || l.k[i] != r.k[i] {
					return false
				}
			}
			return true
		}
		line := func(r row, tag string, i int) string {
			return strings.Join([]string{str(r.k[0]), str(r.k[1]), str(r.k[2]), fmt.Sprintf("%s%d", tag, i)}, "|")
		}
		nulls := "(null)|(null)|(null)|(null)"
		for _, how := range []string{"inner", "left", "right", "full", "semi", "anti"} {
			var want []string
			used := make([]bool, len(rrows))
			for i, l := range lrows {
				found := false
				for j, r := range rrows {
					if !eq(l, r) {
						continue
					}
					found, used[j] = true, true
					if how != "semi" && how != "anti" {
						want = append(want, line(l, "l", i)+"|"+line(r, "r", j))
					}
				}
				switch {
				case how == "semi" && found, how == "anti" && !found:
					want = append(want, line(l, "l", i))
				case !found && (how == "left" || how == "full"):
					want = append(want, line(l, "l", i)+"|"+nulls)
				}
			}
			if how == "right" || how == "full" {
				for j, r := range rrows {
					if !used[j] {
						want = append(want, nulls+"|"+line(r, "r", j))
					}
				}
			}
			if len(want) == 0 {
				t.Fatalf("%s %s: no rows to check", c.name, how)
			}
			for _, workers := range []int{1, 3} {
				stage := Join(Pipeline{Source: FromBatches(right, rrecs...)}, JoinOptions{How: how, Left: []string{"k1", "k2", "k3"}, Right: []string{"r1", "r2", "r3"}})
				got := table(t, fused(t, mem, workers, FromBatches(left, lrecs...), stage))
				if !slices.Equal(got, want) {
					t.Fatalf("%s %s on %d workers: %d rows, want %d\n got %q\nwant %q", c.name, how, workers, len(got), len(want), got, want)
				}
			}
		}
	}
}
