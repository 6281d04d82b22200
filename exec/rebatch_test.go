package exec

import (
	"slices"
	"testing"
)

// TestAggAfterRebatchTakesEmptyBatches: behind rebatch (a fan-out's final
// stage) the stages run one batch at a time, and a join there hands on a
// batch with no rows when none of a left batch's keys match; the
// aggregation after it counts nothing for it.
func TestAggAfterRebatchTakesEmptyBatches(t *testing.T) {
	mem := checkedMem(t)
	left := []joinRow{{0, "l0"}, {1, "l1"}, {2, "l2"}, {3, "l3"}}
	lrecs := joinBatches(t, mem, joinLeft, left, 4)
	rrecs := joinBatches(t, mem, joinRight, []joinRow{{3, "r3"}}, 4)
	defer releaseAll(lrecs)
	defer releaseAll(rrecs)
	// k>>1 cuts the left side into {0, 1}, which matches nothing, and {2, 3}.
	got := table(t, fused(t, mem, 1, FromBatches(joinLeft, lrecs...),
		Rebatch("k", 1, 100),
		Join(Pipeline{Source: FromBatches(joinRight, rrecs...)}, JoinOptions{How: "inner", Left: []string{"k"}, Right: []string{"k"}}),
		CountBy([]string{"b"})))
	if want := []string{"r3|1"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
