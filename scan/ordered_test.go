package scan

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/gen"
)

// TestOrdered: an ordered scan delivers every batch of the unordered
// one, in dataset order, with or without a filter that prunes, and with
// one worker or several.
func TestOrdered(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 40_000, Files: 3, Seed: 9, RowGroupRows: 3000})
	for _, filter := range []string{"", "l_quantity < 10 or l_shipdate >= '1998-01-01'"} {
		for _, conc := range []int{1, 3} {
			opts := Options{Mem: checked(t), BatchRows: 1000, Concurrency: conc, Filter: filter}
			want, _ := scanAll(t, st, "lineitem/", opts)
			opts.Ordered = true
			ds, err := Open(context.Background(), st, "lineitem/", opts)
			if err != nil {
				t.Fatal(err)
			}
			s := ds.Scan(context.Background())
			sum := newSummer()
			var pos []Position
			for s.Next() {
				b := s.Batch()
				pos = append(pos, b.Pos)
				sum.add(b.RecordBatch)
				b.Release()
			}
			s.Close()
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if got := sum.sums(); got.String() != want.String() {
				t.Fatalf("filter %q, %d workers: ordered %v, unordered %v", filter, conc, got, want)
			}
			for i := 1; i < len(pos); i++ {
				a, b := pos[i-1], pos[i]
				if a.File > b.File || a.File == b.File && (a.RowGroup > b.RowGroup || a.RowGroup == b.RowGroup && a.Batch >= b.Batch) {
					t.Fatalf("filter %q, %d workers: batch %d at %+v after %+v", filter, conc, i, b, a)
				}
			}
			if len(pos) == 0 {
				t.Fatal("no batches")
			}
		}
	}
}

// TestOrderedClose: closing an ordered scan early, with workers waiting
// for their turn, releases everything and leaves no goroutine (goleak in
// TestMain).
func TestOrderedClose(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 20_000, Files: 2, Seed: 3, RowGroupRows: 1000})
	ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: checked(t), BatchRows: 500, Concurrency: 4, Ordered: true})
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Scan(context.Background())
	if !s.Next() {
		t.Fatal(s.Err())
	}
	s.Batch().Release()
	s.Close()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestScanEndHoldsNothing: once Next has said the scan is over, the
// scan holds no memory and no worker still runs, ordered or not, before
// any Close. A consumer that reads to the end and checks (or reuses) its
// allocator before closing, or that forgets Close, must find nothing
// outstanding. The ordered scan used to end as soon as the last row
// group was delivered, while the worker that decoded it was still in
// arrow-go's last read of it, holding its buffers.
func TestScanEndHoldsNothing(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 6000, Files: 2, Seed: 5, RowGroupRows: 1000})
	for _, ordered := range []bool{false, true} {
		for _, conc := range []int{1, 3} {
			for range 20 {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: mem, BatchRows: 400, Concurrency: conc, Ordered: ordered})
				if err != nil {
					t.Fatal(err)
				}
				s := ds.Scan(context.Background())
				for s.Next() {
					s.Batch().Release()
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				if n := mem.CurrentAlloc(); n != 0 {
					s.Close()
					t.Fatalf("ordered %v, %d workers: %d bytes still allocated after Next said the scan is over", ordered, conc, n)
				}
				s.Close()
				mem.AssertSize(t, 0)
			}
		}
	}
}
