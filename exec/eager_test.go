package exec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestEagerAggs: a join followed by counts, least and greatest values of
// right columns by left columns gives, aggregated eagerly, the bytes it
// gives row by row (a filter between the two keeps the rewrite off):
// inner and left joins, duplicate and null keys on both sides, nulls
// among the values, left rows without a match, groups of several keys.
func TestEagerAggs(t *testing.T) {
	left := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "g", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	right := arrow.NewSchema([]arrow.Field{
		{Name: "rk", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	r := rand.New(rand.NewPCG(5, 6))
	maybe := func(v any) any {
		if r.IntN(6) == 0 {
			return nil
		}
		return v
	}
	var lrows, rrows [][]any
	for range 400 {
		lrows = append(lrows, []any{maybe(r.IntN(60)), maybe(fmt.Sprint("g", r.IntN(5)))})
	}
	for range 900 {
		rrows = append(rrows, []any{maybe(r.IntN(50)), maybe(r.IntN(1000)), maybe(fmt.Sprint("s", r.IntN(300)))})
	}
	mem := checkedMem(t)
	var lrecs, rrecs []arrow.RecordBatch
	for lo := 0; lo < len(lrows); lo += 70 {
		lrecs = append(lrecs, batch(t, mem, left, lrows[lo:min(lo+70, len(lrows))]...))
	}
	for lo := 0; lo < len(rrows); lo += 110 {
		rrecs = append(rrecs, batch(t, mem, right, rrows[lo:min(lo+110, len(rrows))]...))
	}
	defer releaseAll(lrecs)
	defer releaseAll(rrecs)
	for _, how := range []string{"inner", "left"} {
		for _, c := range []struct{ keys, aggs string }{
			{"k", "count(x) as n"},
			{"k", "count(x) as n, min(s) as lo, max(x + 1) as hi, count(s) as m"},
			{"g", "count(rk) as n, max(s) as hi"},
			{"g,k", "min(x) as lo"},
			{"k", "count(x), max(s)"},
		} {
			t.Run(fmt.Sprintf("%s/%s/%s", how, c.keys, c.aggs), func(t *testing.T) {
				run := func(eager bool) []byte {
					agg, err := AggBy(strings.Split(c.keys, ","), c.aggs)
					if err != nil {
						t.Fatal(err)
					}
					// The side ends in a select, so its columns are known.
					side := Pipeline{Source: FromBatches(right, rrecs...), Stages: []Stage{Select("rk", "x", "s")}}
					stages := []Stage{Join(side, JoinOptions{How: how, Left: []string{"k"}, Right: []string{"rk"}})}
					if !eager {
						f, err := Filter("true")
						if err != nil {
							t.Fatal(err)
						}
						stages = append(stages, f)
					}
					stages = append(stages, agg)
					if got := eagerAggs(stages)[0] != stages[0]; got != eager {
						t.Fatalf("rewritten: %v, want %v", got, eager)
					}
					return fused(t, mem, 2, FromBatches(left, lrecs...), stages...)
				}
				want, got := run(false), run(true)
				if !bytes.Equal(got, want) {
					t.Errorf("eager aggregation's stream differs:\n got %q\nwant %q", table(t, got), table(t, want))
				}
			})
		}
	}
}

// TestEagerAggsLeftAlone: what eager aggregation would change is left
// as written.
func TestEagerAggsLeftAlone(t *testing.T) {
	side := Pipeline{Source: FromBatches(arrow.NewSchema([]arrow.Field{{Name: "rk", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Float64}}, nil))}
	for _, c := range []struct {
		name string
		o    JoinOptions
		keys string
		aggs string
	}{
		{"a sum", JoinOptions{Left: []string{"k"}, Right: []string{"rk"}}, "k", "sum(x) as t"},
		{"a mean", JoinOptions{Left: []string{"k"}, Right: []string{"rk"}}, "k", "mean(x) as t"},
		{"count()", JoinOptions{Left: []string{"k"}, Right: []string{"rk"}}, "k", "count() as n"},
		{"a right key", JoinOptions{Left: []string{"k"}, Right: []string{"rk"}}, "rk", "count(x) as n"},
		{"a left column", JoinOptions{Left: []string{"k"}, Right: []string{"rk"}}, "k", "count(k) as n"},
		{"a right join", JoinOptions{How: "right", Left: []string{"k"}, Right: []string{"rk"}}, "k", "count(x) as n"},
		{"--where", JoinOptions{Left: []string{"k"}, Right: []string{"rk"}, Where: "x > 1"}, "k", "count(x) as n"},
		{"--prefix", JoinOptions{Left: []string{"k"}, Right: []string{"rk"}, Prefix: "r_"}, "k", "count(r_x) as n"},
	} {
		agg, err := AggBy(strings.Split(c.keys, ","), c.aggs)
		if err != nil {
			t.Fatal(err)
		}
		// The side ends in a select, so its columns are known.
		s := side
		s.Stages = []Stage{Select("rk", "x")}
		stages := []Stage{Join(s, c.o), agg}
		if eagerAggs(stages)[0] != stages[0] {
			t.Errorf("%s: rewritten", c.name)
		}
	}
}
