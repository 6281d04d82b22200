package scan

import (
	"context"
	"testing"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/internal/arrowsize"
)

// TestBatchEstimateCoversArrow: the estimate of a batch's memory, made from
// the footer, is at least what the largest decoded batch really holds, for
// every lineitem column (plain, dictionary-encoded strings, numbers, dates)
// and for a projection, so the budget's decode reserve is not short.
func TestBatchEstimateCoversArrow(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 30_000, Files: 2, Seed: 3, RowGroupRows: 10_000})
	for _, cols := range [][]string{nil, {"l_shipmode", "l_quantity"}, {"l_comment"}} {
		mem := checked(t)
		ds, err := Open(context.Background(), st, "lineitem/", Options{Columns: cols, BatchRows: 4096, Mem: mem})
		if err != nil {
			t.Fatal(err)
		}
		estimate := ds.mem.batch
		s := ds.Scan(context.Background())
		var largest int64
		for s.Next() {
			b := s.Batch()
			largest = max(largest, arrowsize.Record(b.RecordBatch))
			b.Release()
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if largest == 0 || estimate < largest {
			t.Errorf("columns %v: a batch estimated at %d bytes holds %d", cols, estimate, largest)
		}
		if estimate > 4*largest {
			t.Errorf("columns %v: a batch estimated at %d bytes holds only %d", cols, estimate, largest)
		}
		mem.AssertSize(t, 0)
	}
}

// TestWorkersFitBudget: decoding runs fewer row groups at once when their
// buffers would take more than three quarters of the budget, fetch keeps
// at least a quarter, and MinMemory covers one row group and one worker.
func TestWorkersFitBudget(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 40_000, Files: 2, Seed: 1, RowGroupRows: 5000})
	open := func(memory int64) *Dataset {
		ds, err := Open(context.Background(), st, "lineitem/", Options{Concurrency: 4, Memory: memory, Mem: checked(t)})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	ds := open(1 << 30)
	one, four := ds.decodeReserve(1), ds.decodeReserve(4)
	if one <= 0 || four <= 3*one {
		t.Fatalf("reserve for 1 worker %d, for 4 %d: want it to grow with the workers", one, four)
	}
	if w := ds.workers(); w != 4 {
		t.Fatalf("1 GiB budget: %d workers, want 4", w)
	}
	if got, want := ds.fetchMemory(), int64(1<<30)-four; got != want {
		t.Fatalf("fetch memory %d, want the budget less the reserve, %d", got, want)
	}

	tight := open(ds.decodeReserve(2)*4/3 + 64)
	if w := tight.workers(); w != 2 {
		t.Fatalf("budget for 2 workers' buffers: %d workers", w)
	}
	small := open(1 << 20)
	if w := small.workers(); w != 1 {
		t.Fatalf("1 MiB budget: %d workers, want 1", w)
	}
	if got := small.fetchMemory(); got != 1<<18 {
		t.Fatalf("1 MiB budget: fetch may hold %d, want a quarter of it", got)
	}
	var unit int64
	for _, g := range small.groups {
		unit = max(unit, g.bytes) // independently of the estimate
	}
	if got := small.MinMemory(); got != unit+one {
		t.Fatalf("MinMemory %d, want a row group (%d) and one worker's reserve (%d)", got, unit, one)
	}
}
