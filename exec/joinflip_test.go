package exec

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// flipRun runs the join as the one stage after src with the join's
// memory given (0: the run's), on two workers, and says the rows out and
// how many spill files were open when the first batch came out: none for
// a join in memory, one (the right side's parts) for a flipped join, more
// for a grace join (the left side's parts, its runs).
func flipRun(t *testing.T, mem memory.Allocator, src SourceStage, join Stage) ([]string, int) {
	t.Helper()
	tmp := t.TempDir()
	var rows []string
	open := -1
	err := Run(context.Background(), Pipeline{Source: src, Stages: []Stage{join, Collect(nil, func(rec arrow.RecordBatch) error {
		if open < 0 {
			open = openIn(t, tmp)
		}
		rows = append(rows, rowText(rec, " ")...)
		return nil
	})}}, Options{Mem: mem, Workers: 2, TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if openIn(t, tmp) > 0 {
		t.Error("spill files still open")
	}
	return rows, open
}

// TestJoinFlips: a semi or anti join whose right side spills and whose
// left side fits the join's memory indexes the left side and reads the
// right side's parts once, with the rows and order of the join in memory
// and of its definition: duplicate and null keys on both sides, a left
// side of one row per batch, of null keys only, empty, and one past the
// memory (which is a grace join).
func TestJoinFlips(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 4))
	key := func(n int) any {
		if rng.IntN(12) == 0 {
			return nil
		}
		return rng.IntN(n)
	}
	var right []joinRow
	for i := range 3000 {
		right = append(right, joinRow{key(1500), fmt.Sprintf("r%d", i)})
	}
	rows := func(n, keys int) []joinRow {
		var out []joinRow
		for i := range n {
			out = append(out, joinRow{key(keys), fmt.Sprintf("l%d", i)})
		}
		return out
	}
	nulls := []joinRow{{nil, "l0"}, {nil, "l1"}, {nil, "l2"}}
	// Left sides this small would have their keys cut the right side
	// first (reduce.go), which would then not spill.
	defer holdFor(0)()
	const budget = 32 << 10
	mem := checkedMem(t)
	rrecs := joinBatches(t, mem, joinRight, right, 700)
	defer releaseAll(rrecs)
	lk, err := newKeyEncoder("test", joinLeft, []string{"k"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		left []joinRow
		per  int
		flip bool
	}{
		{"small", rows(150, 2000), 7, true},
		{"one row a batch", rows(40, 1600), 1, true},
		{"few keys", rows(200, 5), 64, true},
		{"null keys", nulls, 2, true},
		{"empty", nil, 1, true},
		{"past the memory", rows(2000, 2000), 300, false},
	} {
		lrecs := joinBatches(t, mem, joinLeft, c.left, c.per)
		var cost int64
		for _, r := range lrecs {
			cost += sideCost(r, lk)
		}
		if (cost <= budget) != c.flip {
			releaseAll(lrecs)
			t.Fatalf("%s: the left side costs %d, the join has %d", c.name, cost, budget)
		}
		for _, how := range []string{"semi", "anti"} {
			for _, where := range []string{"", "a < 'l3' or b > 'r2'"} {
				t.Run(fmt.Sprintf("%s/%s/%q", c.name, how, where), func(t *testing.T) {
					join := func(memory int64) Stage {
						return Join(Pipeline{Source: FromBatches(joinRight, rrecs...)}, JoinOptions{How: how, Left: []string{"k"}, Right: []string{"k"}, Where: where, Memory: memory})
					}
					match := func(l, r joinRow) bool { return where == "" || l.s < "l3" || r.s > "r2" }
					want := naiveJoin(how, c.left, right, match)
					inMemory, open := flipRun(t, mem, FromBatches(joinLeft, lrecs...), join(0))
					if open > 0 {
						t.Fatal("the join in memory spilled")
					}
					got, open := flipRun(t, mem, FromBatches(joinLeft, lrecs...), join(budget))
					switch {
					case len(want) == 0:
					case c.flip && open != 1:
						t.Errorf("flipped: %d spill files open, want the right side's alone", open)
					case !c.flip && open < 2:
						t.Errorf("grace: %d spill files open, want the left side's too", open)
					}
					if !slices.Equal(inMemory, want) {
						t.Errorf("in memory: %d rows, the definition %d, or another order", len(inMemory), len(want))
					}
					if !slices.Equal(got, want) {
						t.Errorf("spilled: %d rows, the definition %d, or another order\n got %q\nwant %q", len(got), len(want), got, want)
					}
				})
			}
		}
		releaseAll(lrecs)
	}
}

// TestJoinFlipsKeys: a flipped join matches keys as the join in memory
// does: two key columns, a dictionary key on the left against strings on
// the right, integers of other widths, with --where on the left's
// dictionary column.
func TestJoinFlipsKeys(t *testing.T) {
	mem := checkedMem(t)
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	left := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "c", Type: dict, Nullable: true},
		{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	right := arrow.NewSchema([]arrow.Field{
		{Name: "k2", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "c2", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	codes := []string{"x", "y", "z"}
	var lrecs, rrecs []arrow.RecordBatch
	defer func() { releaseAll(lrecs); releaseAll(rrecs) }()
	for bi := range 12 {
		rb := array.NewRecordBuilder(mem, left)
		for i := range 9 {
			n := bi*9 + i
			if n%11 == 0 {
				rb.Field(0).AppendNull()
			} else {
				rb.Field(0).(*array.Int32Builder).Append(int32(n % 40))
			}
			if n%13 == 0 {
				rb.Field(1).AppendNull()
			} else if err := rb.Field(1).(*array.BinaryDictionaryBuilder).AppendString(codes[n%3]); err != nil {
				t.Fatal(err)
			}
			rb.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("l%03d", n))
		}
		lrecs = append(lrecs, rb.NewRecordBatch())
		rb.Release()
	}
	for bi := range 6 {
		rb := array.NewRecordBuilder(mem, right)
		for i := range 500 {
			n := bi*500 + i
			if n%17 == 0 {
				rb.Field(0).AppendNull()
			} else {
				rb.Field(0).(*array.Int64Builder).Append(int64(n*7) % 60)
			}
			rb.Field(1).(*array.StringBuilder).Append(codes[(n/5)%3])
			rb.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("r%04d", n))
		}
		rrecs = append(rrecs, rb.NewRecordBatch())
		rb.Release()
	}
	for _, how := range []string{"semi", "anti"} {
		for _, on := range [][2][]string{{{"k"}, {"k2"}}, {{"k", "c"}, {"k2", "c2"}}, {{"c"}, {"c2"}}} {
			for _, where := range []string{"", "c <> 'y' and b < 'r2000'", "a > 'l050' or b < 'r0100'"} {
				t.Run(fmt.Sprintf("%s/%v/%q", how, on[0], where), func(t *testing.T) {
					join := func(memory int64) Stage {
						return Join(Pipeline{Source: FromBatches(right, rrecs...)}, JoinOptions{How: how, Left: on[0], Right: on[1], Where: where, Memory: memory})
					}
					want, open := flipRun(t, mem, FromBatches(left, lrecs...), join(0))
					if open > 0 {
						t.Fatal("the join in memory spilled")
					}
					got, open := flipRun(t, mem, FromBatches(left, lrecs...), join(16<<10))
					if len(want) > 0 && open != 1 {
						t.Errorf("%d spill files open, want the right side's alone", open)
					}
					if !slices.Equal(got, want) || len(want) == 0 {
						t.Errorf("flipped: %d rows, in memory %d, or another order\n got %q\nwant %q", len(got), len(want), got, want)
					}
				})
			}
		}
	}
}
