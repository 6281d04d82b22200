package exec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestJoinGroupsKeys: a right side of tens of thousands of rows, ten a
// key and some keys null, in batches of several sizes and one empty,
// joins as the join's definition says, each kind, on one and three
// workers: the rows of each key are grouped apart from the side's order
// (joinTable.index), and the rows that matched nothing are found again by
// their number.
func TestJoinGroupsKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	key := func(n int) any {
		if rng.IntN(20) == 0 {
			return nil
		}
		return rng.IntN(n)
	}
	var left, right []joinRow
	for i := range 3000 {
		left = append(left, joinRow{key(5000), fmt.Sprintf("l%d", i)})
	}
	for i := range 40000 {
		right = append(right, joinRow{key(4000), fmt.Sprintf("r%d", i)})
	}
	// The definition, by a map of the right rows of each key.
	byKey := map[int][]int{}
	for i, r := range right {
		if r.k != nil {
			byKey[r.k.(int)] = append(byKey[r.k.(int)], i)
		}
	}
	str := func(k any) string {
		if k == nil {
			return "(null)"
		}
		return fmt.Sprint(k)
	}
	want := func(how string) []string {
		var out []string
		used := make([]bool, len(right))
		for _, l := range left {
			var ms []int
			if l.k != nil {
				ms = byKey[l.k.(int)]
			}
			for _, i := range ms {
				used[i] = true
				out = append(out, str(l.k)+" "+l.s+" "+right[i].s)
			}
			if len(ms) == 0 && (how == "left" || how == "full") {
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
		for _, workers := range []int{1, 3} {
			got := spaced(table(t, fused(t, mem, workers, FromBatches(joinLeft, lrecs...),
				Join(Pipeline{Source: FromBatches(joinRight, rrecs...)}, JoinOptions{How: how, Left: []string{"k"}, Right: []string{"k"}}))))
			if w := want(how); !slices.Equal(got, w) {
				t.Errorf("%s on %d workers: %d rows, want %d; first difference at %d", how, workers, len(got), len(w), firstDiff(got, w))
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
