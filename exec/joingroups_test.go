package exec

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestJoinGroupsKeys: a right side of twenty thousand rows, ten a
// key and some keys null, in batches of several sizes and one empty,
// joins as the join's definition says, each kind, on one and three
// workers: the rows of each key are grouped apart from the side's order
// (joinTable.index), and the rows that matched nothing are found again by
// their number.
func TestJoinGroupsKeys(t *testing.T) {
	left, right := randomSides(7, 20, 2000, 2500, 20000, 2000)
	mem := checkedMem(t)
	lrecs := joinBatches(t, mem, joinLeft, left, 700)
	defer releaseAll(lrecs)
	var rrecs []arrow.RecordBatch
	for lo, i := 0, 0; lo < len(right); i++ {
		n := []int{9000, 0, 13000, 1, 20000}[i%5]
		rrecs = append(rrecs, joinBatches(t, mem, joinRight, right[lo:min(lo+n, len(right))], max(n, 1))...)
		if n == 0 {
			rrecs = append(rrecs, batch(t, mem, joinRight))
		}
		lo += n
	}
	defer releaseAll(rrecs)
	for _, how := range []string{"inner", "left", "right", "full"} {
		want := naiveJoin(how, left, right, func(l, r joinRow) bool { return true })
		for _, workers := range []int{1, 3} {
			got := spaced(table(t, fused(t, mem, workers, FromBatches(joinLeft, lrecs...),
				Join(Pipeline{Source: FromBatches(joinRight, rrecs...)}, JoinOptions{How: how, Left: []string{"k"}, Right: []string{"k"}}))))
			if !slices.Equal(got, want) {
				t.Errorf("%s on %d workers: %d rows, want %d; first difference at %d", how, workers, len(got), len(want), firstDiff(got, want))
			}
		}
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestDistinctInts: the estimate that sizes a join's table is within a
// tenth and a bit of the true count (it adds a tenth on purpose), and
// never above the rows.
func TestDistinctInts(t *testing.T) {
	mem := checkedMem(t)
	keys := &keyEncoder{cols: []keyCol{{idx: 0}}}
	for _, d := range []int{1, 1000, 30000, 100000} {
		rows := make([]joinRow, 100000)
		for i := range rows {
			rows[i] = joinRow{(i % d) * 1024, "x"} // spaced keys: Fibonacci hashing must spread them
		}
		recs := joinBatches(t, mem, joinRight, rows, 16384)
		tb := &joinTable{arrays: tableMem{mem: mem}}
		got := tb.distinctInts(recs, keys, len(rows))
		tb.arrays.release()
		releaseAll(recs)
		if got > len(rows) || float64(got) < 0.95*float64(d) || float64(got) > 1.25*float64(d)+1 {
			t.Errorf("%d distinct keys: estimated %d", d, got)
		}
	}
}
