package scan

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/store"
)

var _ array.RecordReader = (*reader)(nil)

// orderedBatches is what an Options.Ordered scan of pattern delivers, for
// the caller to release.
func orderedBatches(t *testing.T, st *store.Store, pattern string, opts Options) []arrow.RecordBatch {
	t.Helper()
	opts.Ordered = true
	ds, err := Open(context.Background(), st, pattern, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	var out []arrow.RecordBatch
	for s.Next() {
		out = append(out, s.Batch().RecordBatch)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func releaseRecords(rs []arrow.RecordBatch) {
	for _, r := range rs {
		r.Release()
	}
}

func sameBatches(t *testing.T, what string, got, want []arrow.RecordBatch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d batches, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !array.RecordEqual(got[i], want[i]) {
			t.Fatalf("%s: batch %d differs from the ordered scan's", what, i)
		}
	}
}

// TestReader: Dataset.Reader, on a dataset opened for an unordered scan
// with several workers, gives the batches of an ordered scan in its
// order, through arrow-go's consumers of a RecordReader (Flight's stream
// of chunks, the iterator adapters, an IPC writer and reader), leaking
// no memory and no goroutine.
func TestReader(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 30_000, Files: 3, Seed: 5, RowGroupRows: 2000})
	mem := checked(t)
	opts := Options{Mem: mem, BatchRows: 700, Concurrency: 3, Columns: []string{"l_orderkey", "l_shipmode", "l_shipdate"}}
	want := orderedBatches(t, st, "lineitem/", opts)
	defer releaseRecords(want)
	ds, err := Open(context.Background(), st, "lineitem/", opts)
	if err != nil {
		t.Fatal(err)
	}

	// Flight: retains each batch, sends it on, releases the reader.
	ch := make(chan flight.StreamChunk)
	go flight.StreamChunksFromReader(context.Background(), ds.Reader(context.Background()), ch)
	var got []arrow.RecordBatch
	for c := range ch {
		if c.Err != nil {
			t.Fatal(c.Err)
		}
		got = append(got, c.Data)
	}
	sameBatches(t, "flight chunks", got, want)
	releaseRecords(got)

	// Iterator adapters, then an IPC stream written and read back.
	r := ds.Reader(context.Background())
	rr := array.ReaderFromIter(ds.Schema(), array.IterFromReader(r))
	r.Release() // IterFromReader holds its own reference
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rr.Schema()), ipc.WithAllocator(mem))
	for rr.Next() {
		if err := w.Write(rr.RecordBatch()); err != nil {
			t.Fatal(err)
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatal(err)
	}
	rr.Release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ir, err := ipc.NewReader(&buf, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for ir.Next() {
		b := ir.RecordBatch()
		b.Retain()
		got = append(got, b)
	}
	if err := ir.Err(); err != nil {
		t.Fatal(err)
	}
	ir.Release()
	sameBatches(t, "ipc round trip", got, want)
	releaseRecords(got)
}

// TestReaderEarlyRelease: releasing the last reference mid-scan stops the
// scan and frees the batch it held (checked allocator, goleak); a Retain
// keeps it going until the matching Release.
func TestReaderEarlyRelease(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 20_000, Files: 2, Seed: 3, RowGroupRows: 1000})
	ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: checked(t), BatchRows: 500, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := ds.Reader(context.Background())
	r.Retain()
	if !r.Next() || r.RecordBatch().NumRows() == 0 || r.(*reader).Record() != r.RecordBatch() {
		t.Fatalf("no first batch: %v", r.Err())
	}
	r.Release()
	if !r.Next() {
		t.Fatalf("a reference is left, yet the scan stopped: %v", r.Err())
	}
	r.Release()
	if err := r.Err(); err != nil {
		t.Fatalf("Err after Release = %v, want nil", err)
	}
}

// TestReaderCancel: a reader whose context is cancelled ends with that
// cause in Err, never a short result that looks complete.
func TestReaderCancel(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 10_000, Files: 2, Seed: 3, RowGroupRows: 1000})
	ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: checked(t), BatchRows: 500})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := ds.Reader(ctx)
	defer r.Release()
	cancel()
	for r.Next() {
	}
	if !errors.Is(r.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", r.Err())
	}
}

// closeCounter is a driver that counts its Closes.
type closeCounter struct {
	store.Driver
	closes *atomic.Int32
}

func (c closeCounter) Close() error { c.closes.Add(1); return c.Driver.Close() }

// TestOpenURL: OpenURL opens a prefix, a glob and a single file, in a
// mem:// store (with the caller's StoreOptions) and in a directory, and
// Close closes the store it opened, also when the dataset fails to open.
func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	buckets := store.NewMemBuckets()
	mst, _, err := store.Open(ctx, "mem://data/", store.Options{MemBuckets: buckets})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Lineitem(ctx, mst, "lineitem", gen.Options{Rows: 9000, Files: 3, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fst, _, err := store.Open(ctx, dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Lineitem(ctx, fst, "lineitem", gen.Options{Rows: 9000, Files: 3, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	fst.Close()

	var closes atomic.Int32
	so := store.Options{MemBuckets: buckets, Wrap: func(d store.Driver) store.Driver { return closeCounter{d, &closes} }}
	for _, c := range []struct {
		url   string
		files int
	}{
		{"mem://data/lineitem/", 3},
		{"mem://data/lineitem/part-0000[12].parquet", 2},
		{"mem://data/lineitem/part-00000.parquet", 1},
		{filepath.Join(dir, "lineitem"), 3},
		{"file://" + filepath.ToSlash(dir) + "/lineitem/*.parquet", 3},
	} {
		before := closes.Load()
		ds, err := OpenURL(ctx, c.url, Options{Mem: checked(t), Columns: []string{"l_orderkey"}, StoreOptions: so})
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if n := len(ds.Files()); n != c.files {
			t.Errorf("%s: %d files, want %d", c.url, n, c.files)
		}
		r := ds.Reader(ctx)
		var rows int64
		for r.Next() {
			rows += r.RecordBatch().NumRows()
		}
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		r.Release()
		if want := int64(9000 * c.files / 3); rows != want {
			t.Errorf("%s: %d rows, want %d", c.url, rows, want)
		}
		if err := ds.Close(); err != nil {
			t.Fatal(err)
		}
		ds.Close() // a second Close does nothing
		if c.url[:3] == "mem" && closes.Load() != before+1 {
			t.Errorf("%s: the store was closed %d times, want once", c.url, closes.Load()-before)
		}
	}

	before := closes.Load()
	var nf *NoFilesError
	if _, err := OpenURL(ctx, "mem://data/none/", Options{StoreOptions: so}); !errors.As(err, &nf) {
		t.Fatalf("OpenURL of nothing = %v, want a *NoFilesError", err)
	}
	if closes.Load() != before+1 {
		t.Error("a failed OpenURL left its store open")
	}
}
