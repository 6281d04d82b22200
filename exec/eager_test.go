package exec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestEagerAggs: a join followed by counts of right columns (of
// expressions of them, in an inner join) by left columns gives, counted
// eagerly, the bytes it gives row by row (a filter between the two keeps
// the rewrite off): inner and left joins, duplicate and null keys on both
// sides, nulls among the values, left rows without a match, groups of
// several keys. Counting a rewritten join again changes nothing.
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
		for _, c := range []struct {
			keys, aggs string
			// left: rewritten in a left join too (the arguments are
			// columns alone, null in an unmatched row).
			left bool
		}{
			{"k", "count(x) as n", true},
			{"k", "count(x) as n, count(s) as m", true},
			{"g", "count(rk) as n, count(x) as m", true},
			{"g,k", "count(x) as c", true},
			{"k", "count(x), count(s)", true},
			{"k", "count(coalesce(x, 0)) as n, count(x + 1) as m", false},
		} {
			t.Run(fmt.Sprintf("%s/%s/%s", how, c.keys, c.aggs), func(t *testing.T) {
				rewrites := how == "inner" || c.left
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
					once := eagerAggs(stages)
					if got := once[0] != stages[0]; got != (eager && rewrites) {
						t.Fatalf("rewritten: %v, want %v", got, eager && rewrites)
					}
					if twice := eagerAggs(once); len(twice) != len(once) || twice[0] != once[0] {
						t.Fatal("a rewritten aggregation was rewritten again")
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
		{"a least", JoinOptions{Left: []string{"k"}, Right: []string{"rk"}}, "k", "min(x) as t"},
		{"a greatest", JoinOptions{Left: []string{"k"}, Right: []string{"rk"}}, "k", "max(x) as t"},
		{"a left join's count of a coalesce", JoinOptions{How: "left", Left: []string{"k"}, Right: []string{"rk"}}, "k", "count(coalesce(x, 0)) as n"},
		{"a left join's count of is null", JoinOptions{How: "left", Left: []string{"k"}, Right: []string{"rk"}}, "k", "count(x is null) as n"},
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
