package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowsize"
	"github.com/sluice-data/sluice/scan"
)

var (
	joinLeft = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	joinRight = arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
)

type joinRow struct {
	k any
	s string
}

// naiveJoin is the join's definition, a loop over every pair: left rows
// in order, each with its matches in the right side's order, then the
// right rows that matched nothing.
func naiveJoin(how string, left, right []joinRow, match func(l, r joinRow) bool) []string {
	str := func(v any) string {
		if v == nil {
			return "(null)"
		}
		return fmt.Sprint(v)
	}
	var out []string
	used := make([]bool, len(right))
	for _, l := range left {
		found := false
		for i, r := range right {
			if l.k == nil || r.k == nil || l.k != r.k || !match(l, r) {
				continue
			}
			found, used[i] = true, true
			if how != "semi" && how != "anti" {
				out = append(out, str(l.k)+" "+l.s+" "+r.s)
			}
		}
		switch {
		case how == "semi" && found, how == "anti" && !found:
			out = append(out, str(l.k)+" "+l.s)
		case !found && (how == "left" || how == "full"):
			out = append(out, str(l.k)+" "+l.s+" (null)")
		}
	}
	if how == "right" || how == "full" {
		for i, r := range right {
			if !used[i] {
				out = append(out, str(r.k)+" (null) "+r.s)
			}
		}
	}
	return out
}

func joinBatches(t *testing.T, mem memory.Allocator, schema *arrow.Schema, rows []joinRow, per int) []arrow.RecordBatch {
	var recs []arrow.RecordBatch
	for lo := 0; lo < len(rows); lo += per {
		var cells [][]any
		for _, r := range rows[lo:min(lo+per, len(rows))] {
			cells = append(cells, []any{r.k, r.s})
		}
		recs = append(recs, batch(t, mem, schema, cells...))
	}
	return recs
}

// TestJoinKinds checks every kind of join against its definition on
// sides with duplicate keys, null keys and no rows, fused on one and
// three workers and run as a stage of its own over a stream.
func TestJoinKinds(t *testing.T) {
	left := []joinRow{{1, "l1"}, {2, "l2"}, {nil, "l3"}, {1, "l4"}, {5, "l5"}, {3, "l6"}, {2, "l7"}}
	right := []joinRow{{2, "r1"}, {1, "r2"}, {2, "r3"}, {nil, "r4"}, {4, "r5"}, {2, "r6"}}
	for _, sides := range []struct {
		name        string
		left, right []joinRow
	}{{"both", left, right}, {"empty right", left, nil}, {"empty left", nil, right}} {
		for _, how := range []string{"inner", "left", "right", "full", "semi", "anti"} {
			for _, where := range []string{"", "a < 'l5' or b = 'r6'"} {
				name := fmt.Sprintf("%s/%s/%q", sides.name, how, where)
				t.Run(name, func(t *testing.T) {
					mem := checkedMem(t)
					match := func(l, r joinRow) bool { return where == "" || l.s < "l5" || r.s == "r6" }
					want := naiveJoin(how, sides.left, sides.right, match)
					lrecs := joinBatches(t, mem, joinLeft, sides.left, 3)
					rrecs := joinBatches(t, mem, joinRight, sides.right, 4)
					defer releaseAll(lrecs)
					defer releaseAll(rrecs)
					stage := func() Stage {
						return Join(Pipeline{Source: FromBatches(joinRight, rrecs...)}, JoinOptions{How: how, Left: []string{"k"}, Right: []string{"k"}, Where: where})
					}
					for _, workers := range []int{1, 3} {
						got := table(t, fused(t, mem, workers, FromBatches(joinLeft, lrecs...), stage()))
						if !slices.Equal(spaced(got), want) {
							t.Errorf("fused on %d workers:\n got %q\nwant %q", workers, spaced(got), want)
						}
					}
					got := table(t, piped(t, mem, FromBatches(joinLeft, lrecs...), stage()))
					if !slices.Equal(spaced(got), want) {
						t.Errorf("piped:\n got %q\nwant %q", spaced(got), want)
					}
				})
			}
		}
	}
}

func spaced(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.ReplaceAll(r, "|", " ")
	}
	return out
}

// TestJoinPrunesProbeSide: an inner, semi or right join right after a
// scan skips the row groups whose statistics exclude every key of the
// right side (a short list of keys, or their range), with the rows of
// the join unchanged; left, full and anti joins, which keep left rows
// without a match, read them all. The left side is past the hold of a
// join that reads its left side first (TestPruningJoinReduces).
func TestJoinPrunesProbeSide(t *testing.T) {
	_, lineitem := testData(t)
	defer holdFor(0)()
	for _, c := range []struct {
		name, filter string
	}{
		{"in list", "l_orderkey in (3, 4000, 4001, 9000)"},
		{"range", "l_orderkey < 6000"}, // more keys than an in list holds,
	} {
		for _, how := range []string{"inner", "semi", "right", "left", "anti"} {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				mem := checkedMem(t)
				var st scan.Stats
				src := Scan([]string{lineitem}, ScanOptions{Stats: func(_ string, s scan.Stats) { st = s }})
				keys := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{Filter: c.filter}), Stages: []Stage{CountBy([]string{"l_orderkey"})}}
				join := Join(keys, JoinOptions{How: how, Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}, Prefix: "r_"})
				got, err := collectRows(t, mem, src, join, Select("l_orderkey", "l_linenumber"))
				if err != nil {
					t.Fatal(err)
				}
				// The same rows, unpruned: the join as a stage over a stream.
				want, err := collectRows(t, mem, bytesSource(fused(t, mem, 2, Scan([]string{lineitem}, ScanOptions{}))), Join(keys, JoinOptions{How: how, Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}, Prefix: "r_"}), Select("l_orderkey", "l_linenumber"))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) || len(want) == 0 {
					t.Fatalf("pruned %d rows, unpruned %d", len(got), len(want))
				}
				prunes := how == "inner" || how == "semi" || how == "right"
				if prunes != (st.RowGroupsPruned > 0) {
					t.Errorf("%d of %d row groups skipped", st.RowGroupsPruned, st.RowGroups+st.RowGroupsPruned)
				}
			})
		}
	}
}

// randomSides are a join's sides of nl and nr rows, their keys drawn
// below lkeys and rkeys, one in nullEvery null.
func randomSides(seed uint64, nullEvery, nl, lkeys, nr, rkeys int) (left, right []joinRow) {
	rng := rand.New(rand.NewPCG(seed, 2))
	key := func(n int) any {
		if rng.IntN(nullEvery) == 0 {
			return nil
		}
		return rng.IntN(n)
	}
	for i := range nl {
		left = append(left, joinRow{key(lkeys), fmt.Sprintf("l%d", i)})
	}
	for i := range nr {
		right = append(right, joinRow{key(rkeys), fmt.Sprintf("r%d", i)})
	}
	return left, right
}

// TestJoinSpills: a right side larger than the join's memory is joined in
// parts on disk, with the rows and order of the join in memory, for every
// kind; the spill files are gone afterwards.
func TestJoinSpills(t *testing.T) {
	left, right := randomSides(29, 15, 6000, 900, 3000, 1200)
	mem := checkedMem(t)
	lrecs := joinBatches(t, mem, joinLeft, left, 1000)
	rrecs := joinBatches(t, mem, joinRight, right, 700)
	defer releaseAll(lrecs)
	defer releaseAll(rrecs)
	for _, how := range []string{"inner", "left", "right", "full", "semi", "anti"} {
		for _, where := range []string{"", "a < 'l3' or b > 'r2'"} {
			t.Run(fmt.Sprintf("%s/%q", how, where), func(t *testing.T) {
				run := func(memory int64) ([]string, string) {
					tmp := t.TempDir()
					var rows []string
					join := Join(Pipeline{Source: FromBatches(joinRight, rrecs...)}, JoinOptions{How: how, Left: []string{"k"}, Right: []string{"k"}, Where: where, Memory: memory})
					var spilled bool
					err := Run(context.Background(), Pipeline{Source: FromBatches(joinLeft, lrecs...), Stages: []Stage{join, Collect(nil, func(rec arrow.RecordBatch) error {
						if !spilled {
							spilled = openIn(t, tmp) > 0
						}
						rows = append(rows, rowText(rec, " ")...)
						return nil
					})}}, Options{Mem: mem, Workers: 2, TempDir: tmp})
					if err != nil {
						t.Fatal(err)
					}
					if entries, _ := os.ReadDir(tmp); len(entries) > 0 || openIn(t, tmp) > 0 {
						t.Errorf("left behind: %v, or spill files still open", entries)
					}
					return rows, fmt.Sprint(spilled)
				}
				want, spilled := run(0)
				if spilled != "false" {
					t.Fatal("the join in memory spilled")
				}
				// 32 KiB holds some 360 rows with their table: a part (47
				// rows, part 0 some 200 of null keys too), not the side.
				got, spilled := run(32 << 10)
				if spilled != "true" {
					t.Fatal("a right side of 3000 rows in 32 KiB did not spill")
				}
				if !slices.Equal(got, want) {
					t.Errorf("spilled: %d rows, in memory %d, or another order", len(got), len(want))
				}
			})
		}
	}
	// A key whose rows alone exceed the memory is reported.
	var hot []joinRow
	for i := range 3000 {
		hot = append(hot, joinRow{7, fmt.Sprintf("r%d", i)})
	}
	hrecs := joinBatches(t, mem, joinRight, hot, 700)
	defer releaseAll(hrecs)
	_, err := collectRows(t, mem, FromBatches(joinLeft, lrecs...), Join(Pipeline{Source: FromBatches(joinRight, hrecs...)}, JoinOptions{How: "inner", Left: []string{"k"}, Right: []string{"k"}, Memory: 32 << 10}))
	if err == nil || !strings.Contains(err.Error(), "hot key") {
		t.Errorf("hot key: %v", err)
	}
}

// TestJoinHoldsAShareOfTheRunsMemory: a join without --memory of its own
// holds its right side, its table counted, in half the run's memory
// (the scans beside it and the pool's kept buffers have the rest): a
// side whose batches take half and its table more spills, with the
// rows of the join in memory.
func TestJoinHoldsAShareOfTheRunsMemory(t *testing.T) {
	var left, right []joinRow
	for i := range 4000 {
		left = append(left, joinRow{i % 1500, fmt.Sprintf("l%d", i)})
	}
	for i := range 3000 {
		right = append(right, joinRow{i % 2000, fmt.Sprintf("r%d", i)})
	}
	mem := checkedMem(t)
	lrecs := joinBatches(t, mem, joinLeft, left, 1000)
	rrecs := joinBatches(t, mem, joinRight, right, 700)
	defer releaseAll(lrecs)
	defer releaseAll(rrecs)
	var side int64
	for _, r := range rrecs {
		side += arrowsize.Record(r)
	}
	run := func(memory int64) ([]string, bool) {
		tmp := t.TempDir()
		var rows []string
		var spilled bool
		join := Join(Pipeline{Source: FromBatches(joinRight, rrecs...)}, JoinOptions{How: "inner", Left: []string{"k"}, Right: []string{"k"}})
		err := Run(context.Background(), Pipeline{Source: FromBatches(joinLeft, lrecs...), Stages: []Stage{join, Collect(nil, func(rec arrow.RecordBatch) error {
			spilled = spilled || openIn(t, tmp) > 0
			rows = append(rows, rowText(rec, " ")...)
			return nil
		})}}, Options{Mem: mem, Workers: 2, TempDir: tmp, Memory: memory})
		if err != nil {
			t.Fatal(err)
		}
		return rows, spilled
	}
	want, spilled := run(1 << 30)
	if spilled {
		t.Fatal("the join in 1 GiB spilled")
	}
	got, spilled := run(2 * side)
	if !spilled {
		t.Errorf("a right side of %d bytes, its table besides, in a run of %d did not spill", side, 2*side)
	}
	if !slices.Equal(got, want) {
		t.Errorf("spilled: %d rows, in memory %d, or another order", len(got), len(want))
	}
}

// TestJoinRightSideReadsWhatItNeeds: a join's right side fetches the
// columns the join and the stages after it read (its keys, --where's
// columns, the right columns used later), as a scan given just those
// would, with the same rows out.
func TestJoinRightSideReadsWhatItNeeds(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	for _, c := range []struct {
		name    string
		opts    JoinOptions
		after   []Stage
		columns []string // what the right side's scan needs to read
	}{
		{"semi", JoinOptions{How: "semi"}, []Stage{Select("l_orderkey")}, []string{"l_orderkey"}},
		{"where", JoinOptions{How: "anti", Where: "r_l_quantity > l_quantity", Prefix: "r_"}, nil, []string{"l_orderkey", "l_quantity"}},
		{"used later", JoinOptions{How: "inner", Prefix: "r_"}, []Stage{CountBy([]string{"r_l_shipmode"})}, []string{"l_orderkey", "l_shipmode"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Left, c.opts.Right = []string{"l_orderkey"}, []string{"l_orderkey"}
			run := func(right ScanOptions) ([]string, int64) {
				var needed int64
				right.Filter = "l_orderkey < 2000"
				right.Stats = func(_ string, s scan.Stats) { needed = s.BytesNeeded }
				stages := append([]Stage{Join(Pipeline{Source: Scan([]string{lineitem}, right)}, c.opts)}, c.after...)
				rows, err := collectRows(t, mem, Scan([]string{lineitem}, ScanOptions{}), stages...)
				if err != nil {
					t.Fatal(err)
				}
				return rows, needed
			}
			got, pushed := run(ScanOptions{})
			want, narrow := run(ScanOptions{Columns: c.columns})
			all := func() int64 {
				var n int64
				src := Scan([]string{lineitem}, ScanOptions{Filter: "l_orderkey < 2000", Stats: func(_ string, s scan.Stats) { n = s.BytesNeeded }})
				if _, err := collectRows(t, mem, src); err != nil {
					t.Fatal(err)
				}
				return n
			}()
			if pushed != narrow || pushed >= all {
				t.Errorf("the right side needed %d bytes; with --columns %v %d; all columns %d", pushed, c.columns, narrow, all)
			}
			if !slices.Equal(got, want) || len(got) == 0 {
				t.Errorf("%d rows, with the columns given %d", len(got), len(want))
			}
		})
	}
}

// TestJoinLeftSideReadsWhatItNeeds: the scan before a join fetches the
// left columns the join and the stages after it read, though those name
// right columns too (which the scan lacks): as a scan given just those.
func TestJoinLeftSideReadsWhatItNeeds(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	must := mustStage(t)
	for _, how := range []string{"inner", "left", "right", "full"} {
		run := func(cols []string) ([]string, int64) {
			var needed int64
			src := Scan([]string{lineitem}, ScanOptions{Columns: cols, Stats: func(_ string, s scan.Stats) { needed = s.BytesNeeded }})
			right := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{}), Stages: []Stage{CountBy([]string{"l_orderkey"}), must(Rename([2]string{"l_orderkey", "k"}), nil)}}
			rows, err := collectRows(t, mem, src, Join(right, JoinOptions{How: how, Left: []string{"l_orderkey"}, Right: []string{"k"}}), must(Rename([2]string{"count", "n"}), nil), CountBy([]string{"n"}))
			if err != nil {
				t.Fatal(err)
			}
			return rows, needed
		}
		got, pushed := run(nil)
		want, narrow := run([]string{"l_orderkey"})
		if pushed != narrow || !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s: the left scan needed %d bytes, with --columns l_orderkey %d; %d rows, %d", how, pushed, narrow, len(got), len(want))
		}
	}
}

// TestJoinWhereReadsLeftColumns: the scan before a semi or anti join
// with --where fetches the left columns --where names and not, because
// it names right columns too, every column.
func TestJoinWhereReadsLeftColumns(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	for _, how := range []string{"semi", "anti", "inner"} {
		run := func(cols []string) ([]string, int64) {
			var needed int64
			src := Scan([]string{lineitem}, ScanOptions{Columns: cols, Stats: func(_ string, s scan.Stats) { needed = s.BytesNeeded }})
			right := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{}), Stages: []Stage{Select("l_orderkey", "l_suppkey")}}
			join := Join(right, JoinOptions{How: how, Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}, Prefix: "r_", Where: "r_l_suppkey <> l_suppkey"})
			rows, err := collectRows(t, mem, src, join, CountBy([]string{"l_linenumber"}))
			if err != nil {
				t.Fatal(err)
			}
			return rows, needed
		}
		got, pushed := run(nil)
		want, narrow := run([]string{"l_orderkey", "l_suppkey", "l_linenumber"})
		if pushed != narrow || !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s: the left scan needed %d bytes, with --columns l_orderkey,l_suppkey,l_linenumber %d; %d rows, %d", how, pushed, narrow, len(got), len(want))
		}
	}
}
