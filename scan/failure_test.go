package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/internal/await"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

// slowStore is a generated lineitem dataset behind a link with latency,
// so a scan has fetches in flight when it is stopped.
func slowStore(t *testing.T) *store.Store {
	mem, _ := genStore(t, "lineitem", gen.Options{Rows: 80_000, Files: 4, Seed: 2, RowGroupRows: 5000})
	return store.New(sim.Wrap(mem.Driver(), sim.Profile{TTFB: 3 * time.Millisecond, Stream: 50 << 20}), "mem://slow/")
}

func TestCancel(t *testing.T) {
	st := slowStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ds, err := Open(ctx, st, "lineitem/", Options{Mem: checked(t), BatchRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Scan(ctx)
	defer s.Close()
	n := 0
	for s.Next() {
		s.Batch().Release()
		if n++; n == 3 {
			cancel()
		}
	}
	if err := s.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	if n >= 80 {
		t.Fatalf("%d batches after cancelling at 3: the scan ran to the end", n)
	}
}

func TestCloseEarly(t *testing.T) {
	st := slowStore(t)
	ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: checked(t), BatchRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, stop := range []int{0, 1, 5} {
		s := ds.Scan(context.Background())
		for i := 0; i < stop && s.Next(); i++ {
			s.Batch().Release()
		}
		s.Close()
		s.Close()
		if err := s.Err(); err != nil {
			t.Fatalf("Err after Close: %v", err)
		}
		if s.Next() {
			t.Fatal("Next after Close")
		}
	}
}

// TestChangedDuringScan: a file replaced between Open and the read of its
// row groups fails the scan with an error naming it, never a mix.
func TestChangedDuringScan(t *testing.T) {
	st, files := genStore(t, "lineitem", gen.Options{Rows: 20_000, Files: 2, Seed: 4, RowGroupRows: 5000})
	// Files read whole at Open are read from the version they were read
	// at; here the row groups are read after.
	s := scanReplaced(t, st, files, Options{Mem: checked(t), maxWhole: -1})
	defer s.Close()
	for s.Next() {
		s.Batch().Release()
	}
	err := s.Err()
	if !errors.Is(err, store.ErrPrecondition) || !strings.HasPrefix(err.Error(), "scan mem://"+t.Name()+"/lineitem/part-00001.parquet: ") {
		t.Fatalf("got %v", err)
	}
}

// scanReplaced opens lineitem/ in st, then replaces its second file by
// the first (files[0]) and starts the scan.
func scanReplaced(t *testing.T, st *store.Store, files [][]byte, opts Options) *Scanner {
	t.Helper()
	ds, err := Open(context.Background(), st, "lineitem/", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), "lineitem/part-00001.parquet", bytes.NewReader(files[0]), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return ds.Scan(context.Background())
}

// TestCorruptPage: garbage in a column chunk fails the scan with one line
// naming the file and row group, with no memory left allocated.
func TestCorruptPage(t *testing.T) {
	st, files := genStore(t, "lineitem", gen.Options{Rows: 20_000, Files: 2, Seed: 4, RowGroupRows: 5000})
	ds, err := Open(context.Background(), st, "lineitem/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The last row group of the second file, every column chunk.
	g := ds.groups[len(ds.groups)-1]
	data := bytes.Clone(files[1])
	for _, r := range g.ranges {
		for i := r.Off + 8; i < r.Off+r.Len-4; i += 3 {
			data[i] ^= 0x5a
		}
	}
	if _, err := st.Put(context.Background(), "lineitem/part-00001.parquet", bytes.NewReader(data), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 4} {
		ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: checked(t), Concurrency: workers})
		if err != nil {
			t.Fatal(err)
		}
		s := ds.Scan(context.Background())
		for s.Next() {
			s.Batch().Release()
		}
		err = s.Err()
		s.Close()
		want := fmt.Sprintf("scan mem://%s/lineitem/part-00001.parquet: row group %d: ", t.Name(), g.rg)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("got %v, want %q...", err, want)
		}
	}
}

func TestMissingObject(t *testing.T) {
	st, _ := genStore(t, "lineitem", gen.Options{Rows: 20_000, Files: 2, Seed: 4, RowGroupRows: 5000})
	ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: checked(t), maxWhole: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(context.Background(), "lineitem/part-00000.parquet"); err != nil {
		t.Fatal(err)
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	for s.Next() {
		s.Batch().Release()
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "part-00000.parquet") {
		t.Fatalf("got %v", err)
	}
}

// cutDriver serves a store's objects, except that once armed, every read
// of key stops at byte cut of the object: it reports reaching it and
// then waits until its request is cancelled.
type cutDriver struct {
	store.Driver
	key     string
	cut     int64
	armed   atomic.Bool
	reached chan struct{}
	once    sync.Once
}

func (d *cutDriver) ReadRange(ctx context.Context, key string, r store.Range, opts store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	rc, info, err := d.Driver.ReadRange(ctx, key, r, opts)
	if err != nil || key != d.key || !d.armed.Load() {
		return rc, info, err
	}
	return &cutReader{ReadCloser: rc, d: d, ctx: ctx, left: d.cut - r.Off}, info, nil
}

type cutReader struct {
	io.ReadCloser
	d    *cutDriver
	ctx  context.Context
	left int64 // bytes before the cut
}

func (r *cutReader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		r.d.once.Do(func() { close(r.d.reached) })
		<-r.ctx.Done()
		return 0, r.ctx.Err()
	}
	p = p[:min(int64(len(p)), r.left)]
	n, err := r.ReadCloser.Read(p)
	r.left -= int64(n)
	return n, err
}

// TestCloseMidBatch: a scan closed while a worker is in the middle of
// a batch (the first column of the projection decoded into arrow-go's
// builders, the read of the second waiting for bytes that never come)
// gives every byte of the allocator back, ordered or not: arrow-go's
// read, cut short by the cancellation, fails, and the reader's Release
// frees what its builders held.
func TestCloseMidBatch(t *testing.T) {
	src, _ := genStore(t, "lineitem", gen.Options{Rows: 8000, Files: 1, Seed: 6, RowGroupRows: 8000})
	cols := []string{"l_returnflag", "l_comment"}
	ds, err := Open(context.Background(), src, "lineitem/", Options{Columns: cols})
	if err != nil {
		t.Fatal(err)
	}
	g := ds.groups[0]
	if len(g.ranges) != 2 {
		t.Fatalf("%d ranges, want one per column", len(g.ranges))
	}
	for _, ordered := range []bool{false, true} {
		for _, batch := range []int{100, 1000, 8000} {
			// Bytes stop in the middle of the first column's chunk, then
			// of the second's. What the first case holds while waiting
			// (nothing decoded yet) tells, in the second, when the first
			// column's values are in the builders.
			var before int64
			for c, r := range g.ranges {
				d := &cutDriver{Driver: src.Driver(), key: g.file.key, cut: r.Off + r.Len/2, reached: make(chan struct{})}
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				ds, err := Open(context.Background(), store.New(d, "mem://cut/"), "lineitem/", Options{Mem: mem, Columns: cols, BatchRows: batch, Ordered: ordered, maxWhole: -1})
				if err != nil {
					t.Fatal(err)
				}
				d.armed.Store(true)
				s := ds.Scan(context.Background())
				<-d.reached
				await.Until(t, "the reader to wait for the stalled bytes", func() bool { return parkedIn("fetch.(*Unit).wait") && int64(mem.CurrentAlloc()) > before })
				if c == 0 {
					before = int64(mem.CurrentAlloc())
				}
				s.Close()
				if err := s.Err(); err != nil {
					t.Fatalf("Err after Close: %v", err)
				}
				if n := mem.CurrentAlloc(); n != 0 {
					t.Fatalf("ordered %v, batches of %d, cut in column %d: %d bytes still allocated after Close", ordered, batch, c, n)
				}
			}
		}
	}
}

// parkedIn reports whether some goroutine is blocked in the function.
func parkedIn(fn string) bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn)
}
