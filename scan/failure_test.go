package scan

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/gen"
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
	ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(context.Background(), "lineitem/part-00001.parquet", bytes.NewReader(files[0]), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	for s.Next() {
		s.Batch().Release()
	}
	err = s.Err()
	if !errors.Is(err, store.ErrPrecondition) || !strings.HasPrefix(err.Error(), "scan mem://"+t.Name()+"/lineitem/part-00001.parquet: ") {
		t.Fatalf("got %v", err)
	}
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
	ds, err := Open(context.Background(), st, "lineitem/", Options{Mem: checked(t)})
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
