package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/internal/arrowsize"
	"github.com/sluice-data/sluice/scan"
)

// TestJoinReducesRightSide: a join whose right side aggregates by its
// keys runs its left side first and, when that is small, folds only the
// right rows of the left side's keys: the right side's scan skips the row
// groups that cannot hold them, and the rows are those of the join
// without it (a left side past the hold, which goes on as a stream and
// reads the right side whole), on one worker and on three.
func TestJoinReducesRightSide(t *testing.T) {
	_, lineitem := testData(t)
	aggregated := []Stage{mustStage(t)(Filter("l_quantity > 5")), mustStage(t)(AggBy([]string{"l_orderkey"}, "sum(l_quantity) as q, count() as n")), mustStage(t)(Filter("n > 4"))}
	// Without an aggregation the right side's rows are cut, and the
	// join's table holds only those.
	plain := []Stage{mustStage(t)(Filter("l_quantity > 45")), Select("l_orderkey", "l_quantity", "l_linenumber"), Rename([2]string{"l_quantity", "q"}, [2]string{"l_linenumber", "n"})}
	for _, c := range []struct {
		name  string
		right []Stage
	}{{"aggregated", aggregated}, {"plain", plain}} {
		for _, how := range []string{"inner", "left", "semi", "anti"} {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				run := func(hold int64, workers int) (rows []string, rightPruned int) {
					defer holdFor(hold)()
					mem := checkedMem(t)
					// A semi join picks a few orders; the join after it sums
					// each order's quantity over all of lineitem.
					few := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{Filter: "l_orderkey in (3, 4000, 4001, 9000) and l_linenumber = 1"}), Stages: []Stage{Select("l_orderkey")}}
					right := Pipeline{
						Source: Scan([]string{lineitem}, ScanOptions{Stats: func(_ string, s scan.Stats) { rightPruned = s.RowGroupsPruned }}),
						Stages: c.right,
					}
					stages := []Stage{
						Join(few, JoinOptions{How: "semi", Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}}),
						Join(right, JoinOptions{How: how, Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}, Prefix: "r_"}),
					}
					if how == "inner" || how == "left" {
						stages = append(stages, Select("l_orderkey", "l_linenumber", "l_quantity", "r_q", "r_n"))
					} else {
						stages = append(stages, Select("l_orderkey", "l_linenumber", "l_quantity"))
					}
					err := Run(context.Background(), Pipeline{Source: Scan([]string{lineitem}, ScanOptions{}), Stages: append(stages, Collect(nil, func(rec arrow.RecordBatch) error {
						rows = append(rows, rowText(rec, " ")...)
						return nil
					}))}, Options{Open: testOpen, Mem: mem, Workers: workers})
					if err != nil {
						t.Fatal(err)
					}
					return rows, rightPruned
				}
				// A hold of 8 bytes ends at the first batch.
				want, pruned := run(8, 2)
				if len(want) == 0 {
					t.Fatal("no rows")
				}
				t.Logf("%d rows", len(want))
				if pruned != 0 {
					t.Fatalf("a left side past the hold: the right side's scan skipped %d row groups", pruned)
				}
				for _, workers := range []int{1, 3} {
					got, pruned := run(-1, workers)
					if !slices.Equal(got, want) {
						t.Errorf("reduced on %d workers:\n got %q\nwant %q", workers, got, want)
					}
					if pruned == 0 {
						t.Errorf("reduced on %d workers: the right side's scan skipped no row group", workers)
					}
				}
			})
		}
	}
}

// holdFor sets reduceHold to n bytes (-1: as it is) and returns what
// puts it back.
func holdFor(n int64) func() {
	prev := reduceHold
	if n >= 0 {
		reduceHold = func(*env, bool) int64 { return n }
	}
	return func() { reduceHold = prev }
}

// TestJoinReducingEnds: the rest of the pipeline stopping early (a head)
// or the left side failing part way ends the run with every batch
// released, whether the left side was held or went on as a stream.
func TestJoinReducingEnds(t *testing.T) {
	_, lineitem := testData(t)
	right := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{}), Stages: []Stage{CountBy([]string{"l_orderkey"})}}
	whole := fused(t, checkedMem(t), 2, Scan([]string{lineitem}, ScanOptions{}), Select("l_orderkey", "l_quantity"))
	for _, hold := range []int64{8, -1} {
		restore := holdFor(hold)
		mem := checkedMem(t)
		var n int64
		err := Run(context.Background(), Pipeline{Source: bytesSource(whole), Stages: []Stage{
			Join(right, JoinOptions{How: "inner", Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}}),
			Head(2),
			Collect(nil, func(rec arrow.RecordBatch) error { n += rec.NumRows(); return nil }),
		}}, Options{Open: testOpen, Mem: mem, Workers: 2})
		if err != nil || n != 2 {
			t.Errorf("hold %d: %d rows, %v", hold, n, err)
		}

		mem = checkedMem(t)
		n = 0
		err = Run(context.Background(), Pipeline{Source: bytesSource(whole[:len(whole)*2/3]), Stages: []Stage{
			Join(right, JoinOptions{How: "inner", Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}}),
			Collect(nil, func(rec arrow.RecordBatch) error { n += rec.NumRows(); return nil }),
		}}, Options{Open: testOpen, Mem: mem, Workers: 2})
		if err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("hold %d: a left side cut short: %d rows and %v", hold, n, err)
		}
		restore()
	}
}

// TestJoinCutsSide: a join whose side, read whole, is past cutSideMin
// holds its left side on into cutHold and, if it ends there (a few orders
// against all of lineitem), cuts the side to the rows of its keys: right
// after a scan, which the side's keys prune, and after a reducing join's
// hold. A left side past cutHold (all of lineitem against a few orders)
// goes on as it is, the scan pruned all the same. The rows are those of
// the join without any of this.
func TestJoinCutsSide(t *testing.T) {
	_, lineitem := testData(t)
	mem := checkedMem(t)
	few := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{Filter: "l_orderkey in (3, 4000, 4001, 9000) and l_linenumber = 1"}), Stages: []Stage{Select("l_orderkey")}}
	fewBytes := fused(t, mem, 2, few.Source, few.Stages...)
	all := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{}), Stages: []Stage{Select("l_orderkey", "l_quantity")}}
	for _, c := range []struct {
		name string
		left func(stats func(string, scan.Stats)) Pipeline
		// right is all of lineitem, or the few orders when the left side
		// is all of it.
		small bool
		how   string
	}{
		{"pruning/small left/inner", func(func(string, scan.Stats)) Pipeline { return few }, true, "inner"},
		{"pruning/small left/semi", func(func(string, scan.Stats)) Pipeline { return few }, true, "semi"},
		{"reducing/small left/inner", func(func(string, scan.Stats)) Pipeline { return Pipeline{Source: bytesSource(fewBytes)} }, true, "inner"},
		{"reducing/small left/left", func(func(string, scan.Stats)) Pipeline { return Pipeline{Source: bytesSource(fewBytes)} }, true, "left"},
		{"pruning/large left/inner", func(stats func(string, scan.Stats)) Pipeline {
			return Pipeline{Source: Scan([]string{lineitem}, ScanOptions{Stats: stats}), Stages: []Stage{Select("l_orderkey", "l_quantity")}}
		}, false, "inner"},
		{"pruning/large left/semi", func(stats func(string, scan.Stats)) Pipeline {
			return Pipeline{Source: Scan([]string{lineitem}, ScanOptions{Stats: stats}), Stages: []Stage{Select("l_orderkey", "l_quantity")}}
		}, false, "semi"},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(sideMin, hold int64) (rows []string, leftPruned int, cut [2]int64) {
				// A reducing join's own hold ends at the first batch.
				defer holdFor(8)()
				prevMin, prevHold, prevCut := cutSideMin, cutHold, sideCut
				cutSideMin, cutHold = sideMin, func(*env) int64 { return hold }
				sideCut = func(before, after int64) { cut = [2]int64{before, after} }
				defer func() { cutSideMin, cutHold, sideCut = prevMin, prevHold, prevCut }()
				mem := checkedMem(t)
				left := c.left(func(_ string, s scan.Stats) { leftPruned += s.RowGroupsPruned })
				right := all
				if !c.small {
					right = few
				}
				err := Run(context.Background(), Pipeline{Source: left.Source, Stages: append(slices.Clone(left.Stages),
					Join(right, JoinOptions{How: c.how, Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}, Prefix: "r_"}),
					Collect(nil, func(rec arrow.RecordBatch) error {
						rows = append(rows, rowText(rec, " ")...)
						return nil
					}))}, Options{Open: testOpen, Mem: mem, Workers: 2})
				if err != nil {
					t.Fatal(err)
				}
				return rows, leftPruned, cut
			}
			// A side under cutSideMin is joined as it is.
			want, _, cut := run(1<<40, 1<<40)
			if len(want) == 0 {
				t.Fatal("no rows")
			}
			if cut != [2]int64{} {
				t.Fatalf("a side under cutSideMin was cut from %d to %d rows", cut[0], cut[1])
			}
			got, leftPruned, cut := run(0, 4096)
			if !slices.Equal(got, want) {
				t.Errorf("cut:\n got %q\nwant %q", got, want)
			}
			if c.small {
				if cut[0] != 30_000 || cut[1] == 0 || cut[1] > 100 {
					t.Errorf("a left side within the hold: the side cut from %d to %d rows", cut[0], cut[1])
				}
			} else {
				if cut != [2]int64{} {
					t.Errorf("a left side past the hold: the side cut from %d to %d rows", cut[0], cut[1])
				}
				if leftPruned == 0 {
					t.Error("a left side past the hold: its scan skipped no row group")
				}
			}
		})
	}
}

// TestLeftRunCounted: what a reducing join holds of its left side is in
// the run's budget, pinned, until it is handed on or the run stops.
func TestLeftRunCounted(t *testing.T) {
	_, lineitem := testData(t)
	for _, stopEarly := range []bool{false, true} {
		mem := checkedMem(t)
		b := newMemBudget(1 << 30)
		ctx := withBudget(context.Background(), b)
		l := startLeft(ctx, Pipeline{Source: Scan([]string{lineitem}, ScanOptions{}), Stages: []Stage{Select("l_orderkey")}}, nil, Options{Open: testOpen, Mem: mem})
		if _, err := l.schema(); err != nil {
			t.Fatal(err)
		}
		ended, err := l.hold(1 << 30)
		if err != nil || !ended || len(l.held) == 0 {
			t.Fatalf("held %d batches, ended %v, %v", len(l.held), ended, err)
		}
		var want int64
		for _, rec := range l.held {
			want += arrowsize.Record(rec)
		}
		if _, used, _ := b.stats(); used != want || b.pinned != want {
			t.Fatalf("held %d bytes: the budget counts %d, %d pinned", want, used, b.pinned)
		}
		if !stopEarly {
			for len(l.held) > 0 {
				l.next().Release()
			}
			if _, used, _ := b.stats(); used != 0 {
				t.Errorf("all handed on: the budget counts %d", used)
			}
		}
		l.stop()
		if _, used, _ := b.stats(); used != 0 || b.pinned != 0 {
			t.Errorf("stopped: the budget counts %d, %d pinned", used, b.pinned)
		}
	}
}

// TestJoinCutsSpilledSide: a side past the join's memory, spilled in
// parts, is cut as one in memory would be when the left side ends within
// cutHold: read back through the left side's keys, in its order, and held
// if that fits (a few orders' lines); else (half of the orders) the join
// goes on spilled. The rows are those of the join that held its side.
func TestJoinCutsSpilledSide(t *testing.T) {
	_, lineitem := testData(t)
	all := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{}), Stages: []Stage{Select("l_orderkey", "l_quantity", "l_linenumber")}}
	for _, c := range []struct {
		name   string
		filter string
		fits   bool
	}{
		{"few keys", "l_orderkey in (3, 4000, 4001, 9000, 9001) and l_linenumber <= 2", true},
		{"half the keys", "l_orderkey % 2 = 0 and l_linenumber = 1", false},
	} {
		few := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{Filter: c.filter}), Stages: []Stage{Select("l_orderkey", "l_linenumber")}}
		fewBytes := fused(t, checkedMem(t), 2, few.Source, few.Stages...)
		for _, how := range []string{"inner", "left"} {
			for _, reducing := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/reducing %v", c.name, how, reducing), func(t *testing.T) {
					run := func(sideMin, joinMemory int64) (rows []string, cut [2]int64) {
						defer holdFor(8)()
						prevMin, prevHold, prevCut := cutSideMin, cutHold, sideCut
						cutSideMin, cutHold = sideMin, func(*env) int64 { return 1 << 20 }
						sideCut = func(before, after int64) { cut = [2]int64{before, after} }
						defer func() { cutSideMin, cutHold, sideCut = prevMin, prevHold, prevCut }()
						left := few
						if reducing {
							left = Pipeline{Source: bytesSource(fewBytes)}
						}
						err := Run(context.Background(), Pipeline{Source: left.Source, Stages: append(slices.Clone(left.Stages),
							Join(all, JoinOptions{How: how, Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}, Prefix: "r_", Memory: joinMemory}),
							Collect(nil, func(rec arrow.RecordBatch) error {
								rows = append(rows, rowText(rec, " ")...)
								return nil
							}))}, Options{Open: testOpen, Mem: checkedMem(t), Workers: 2})
						if err != nil {
							t.Fatal(err)
						}
						return rows, cut
					}
					want, cut := run(1<<40, 1<<30)
					if len(want) < 10 || cut != [2]int64{} {
						t.Fatalf("the side held whole: %d rows, cut %v", len(want), cut)
					}
					// 64 KiB: the side spills.
					got, cut := run(0, 64<<10)
					if !slices.Equal(got, want) {
						t.Errorf("spilled:\n got %d rows %q\nwant %d rows", len(got), got[:min(len(got), 5)], len(want))
					}
					switch {
					case c.fits && (cut[0] != 30_000 || cut[1] == 0 || cut[1] > 100):
						t.Errorf("the spilled side cut from %d to %d rows", cut[0], cut[1])
					case !c.fits && cut != [2]int64{}:
						t.Errorf("a cut past the join's memory was kept: from %d to %d rows", cut[0], cut[1])
					}
				})
			}
		}
	}
}
