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

// TestLocalReadAhead: over a local store, a scan left at the default
// budget fetches only the row groups being decoded and one more (reading
// further ahead hides no latency there, and costs fresh memory), and reads
// what a scan with a budget given reads.
func TestLocalReadAhead(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 40_000, Files: 2, Seed: 5, RowGroupRows: 2500})
	opts := Options{Concurrency: 2, Columns: []string{"l_orderkey", "l_comment", "l_shipdate"}}
	ds, err := Open(context.Background(), st, "lineitem/", opts)
	if err != nil {
		t.Fatal(err)
	}
	var unit int64
	for _, g := range ds.groups {
		unit = max(unit, g.bytes)
	}
	mem := checked(t)
	opts.Mem = mem
	local, st1 := scanAll(t, st, "lineitem/", opts)
	opts.Memory = 1 << 30
	given, st2 := scanAll(t, st, "lineitem/", opts)
	mem.AssertSize(t, 0)
	if local.String() != given.String() {
		t.Fatalf("default budget read %s, a budget given %s", local, given)
	}
	const page = 256 << 10 // the largest fetch page: each unit rounds up to pages
	if high := st1.Fetch.MemoryHigh; high > 3*(unit+page) {
		t.Errorf("default budget over a local store: fetch held %d bytes, want at most 3 row groups of %d", high, unit)
	}
	if st2.Fetch.MemoryHigh <= st1.Fetch.MemoryHigh {
		t.Errorf("a 1 GiB budget held %d bytes, the default %d: the test does not tell them apart", st2.Fetch.MemoryHigh, st1.Fetch.MemoryHigh)
	}
}

// TestOrderedReserve: an ordered scan's reserve also holds the batches of
// the row groups decoded ahead of the one due (every worker's but one),
// so a budget that fits two unordered workers' buffers fits one ordered.
func TestOrderedReserve(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 40_000, Files: 2, Seed: 1, RowGroupRows: 5000})
	open := func(memory int64, ordered bool) *Dataset {
		ds, err := Open(context.Background(), st, "lineitem/", Options{Concurrency: 2, Memory: memory, BatchRows: 1000, Ordered: ordered, Mem: checked(t)})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	free, ordered := open(1<<30, false), open(1<<30, true)
	if free.mem.batches != 5 {
		t.Fatalf("row groups of 5000 rows in batches of 1000: %d batches a row group, want 5", free.mem.batches)
	}
	if got, want := ordered.decodeReserve(1), free.decodeReserve(1); got != want {
		t.Fatalf("one ordered worker reserves %d, want what an unordered one does (%d): nothing is decoded ahead", got, want)
	}
	if got, want := ordered.decodeReserve(2)-free.decodeReserve(2), 5*free.mem.batch; got != want {
		t.Fatalf("two ordered workers reserve %d more than unordered, want a row group's 5 batches (%d)", got, want)
	}
	budget := free.decodeReserve(2)*4/3 + 64
	if w := open(budget, false).workers(); w != 2 {
		t.Fatalf("unordered, a budget for 2 workers' buffers: %d workers", w)
	}
	if w := open(budget, true).workers(); w != 1 {
		t.Fatalf("ordered, the same budget: %d workers, want 1", w)
	}
}
