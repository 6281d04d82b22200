package gen

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/store"
)

func TestInvalidOptions(t *testing.T) {
	cases := []struct {
		opts Options
		want string
	}{
		{Options{Rows: 0, Files: 1}, "Rows must be > 0"},
		{Options{Rows: -5, Files: 1}, "Rows must be > 0"},
		{Options{Rows: 10, Files: 0}, "Files must be > 0"},
		{Options{Rows: 3, Files: 4}, "Files (4) must not exceed Rows (3)"},
		{Options{Rows: 10, Files: 1, RowGroupRows: -1}, "RowGroupRows must be >= 0"},
		{Options{Rows: 10, Files: 1, Concurrency: -2}, "Concurrency must be >= 0"},
	}
	for _, tb := range tables {
		for _, c := range cases {
			st := memStore()
			_, err := tb.gen(context.Background(), st, "ds", c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %+v: error %v, want %q", tb.name, c.opts, err, c.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error is not one line: %q", tb.name, err)
			}
			assertEmpty(t, st)
		}
		if _, err := tb.gen(context.Background(), nil, "ds", Options{Rows: 1, Files: 1}); err == nil {
			t.Errorf("%s: nil store accepted", tb.name)
		}
		if _, err := tb.gen(context.Background(), memStore(), "../ds", Options{Rows: 1, Files: 1}); err == nil {
			t.Errorf("%s: prefix with .. accepted", tb.name)
		}
	}
}

func assertEmpty(t *testing.T, st *store.Store) {
	t.Helper()
	objs, err := st.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		t.Errorf("left behind: %s (%d bytes)", o.Key, o.Size)
	}
}

func TestCancel(t *testing.T) {
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			opts := Options{Rows: 40_000, Files: 4, Seed: 1, RowGroupRows: 2_000, Concurrency: 1}
			_, full := generateT(t, tb.gen, opts)

			// Cancel once the second file is being written: the first is
			// committed by then and must be removed again.
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var written atomic.Int64
			opts.Mem = mem
			opts.Progress = func(n int64) {
				if written.Add(n) > full.Files[0].Bytes {
					cancel()
				}
			}
			st := memStore()
			_, err := tb.gen(ctx, st, "ds", opts)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
			if written.Load() >= full.Bytes {
				t.Fatalf("wrote %d bytes of %d: the cancellation came too late to test anything", written.Load(), full.Bytes)
			}
			assertEmpty(t, st)
		})
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st := memStore()
	if _, err := Lineitem(ctx, st, "ds", Options{Rows: 1000, Files: 2}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	assertEmpty(t, st)
}

// failingDriver fails writes to one key after some bytes.
type failingDriver struct {
	store.Driver
	key   string
	after int
}

var errInjected = errors.New("injected write failure")

func (d *failingDriver) NewWriter(ctx context.Context, key string, opts store.WriteOptions) (store.DriverWriter, error) {
	w, err := d.Driver.NewWriter(ctx, key, opts)
	if err != nil || key != d.key {
		return w, err
	}
	return &failingWriter{DriverWriter: w, left: d.after}, nil
}

type failingWriter struct {
	store.DriverWriter
	left int
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		return 0, errInjected
	}
	w.left -= len(p)
	return w.DriverWriter.Write(p)
}

func TestWriteFailure(t *testing.T) {
	for _, tb := range tables {
		t.Run(tb.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
			defer mem.AssertSize(t, 0)
			st := store.New(&failingDriver{Driver: store.NewMemDriver(), key: "ds/part-00002.parquet", after: 10_000}, "mem://t/")
			opts := Options{Rows: 40_000, Files: 4, Seed: 1, RowGroupRows: 2_000, Concurrency: 2, Mem: mem}
			_, err := tb.gen(context.Background(), st, "ds", opts)
			if !errors.Is(err, errInjected) {
				t.Fatalf("error %v, want the injected one", err)
			}
			if !strings.Contains(err.Error(), "part-00002.parquet") {
				t.Errorf("error %q does not name the file", err)
			}
			assertEmpty(t, st)
		})
	}
}

func TestProgressAndRowGroups(t *testing.T) {
	var reported atomic.Int64
	opts := Options{Rows: 2_500, Files: 2, Seed: 3, RowGroupRows: 500, Progress: func(n int64) { reported.Add(n) }}
	st, res := generateT(t, Taxi, opts)
	if reported.Load() != res.Bytes {
		t.Errorf("Progress reported %d bytes, Result says %d", reported.Load(), res.Bytes)
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for i, p := range checkLayout(t, mem, st, res, opts, TaxiSchema(), 3) {
		if n := p.rdr.NumRowGroups(); n != 3 {
			t.Errorf("file %d: %d row groups of at most 500 rows for 1250 rows, want 3", i, n)
		}
	}
}

func TestDefaultRowGroupRows(t *testing.T) {
	cases := []struct {
		rows  int64
		files int
		want  int64
	}{
		{1, 1, 1},
		{100, 1, 25},
		{103, 2, 12},
		{6_001_215, 1, 1_500_303},
		{60_000_000, 1, 1 << 20},
	}
	for _, c := range cases {
		got := Options{Rows: c.rows, Files: c.files}.rowGroupRows()
		if got != min(c.want, maxRowGroupRows) {
			t.Errorf("%d rows in %d files: %d rows per group, want %d", c.rows, c.files, got, c.want)
		}
	}
}
