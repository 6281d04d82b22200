package scan

import (
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/store"
)

// TestSmallFilesOneRead: files small enough are read whole by their footer
// read and their row groups decoded from those bytes, with no request of
// their own, as long as Memory/keepShare holds them; the files beyond that,
// and a file too large, are fetched as usual. The values are the same
// either way.
func TestSmallFilesOneRead(t *testing.T) {
	st, files := genStore(t, "lineitem", gen.Options{Rows: 6000, Files: 3, RowGroupRows: 1000, Seed: 3})
	var largest int64
	for _, f := range files {
		if int64(len(f)) > wholeFile {
			t.Fatalf("a file of %d bytes: not a small file", len(f))
		}
		largest = max(largest, int64(len(f)))
	}
	want := reference(t, files, nil, nil)
	cases := []struct {
		name   string
		memory int64
		given  int // files whose row groups are given
	}{
		{"all kept", 0, 3},
		{"room for one", keepShare * (largest + largest/2), 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, s := scanAll(t, st, "lineitem/", Options{Memory: c.memory, Mem: checked(t)})
			if got.String() != want.String() {
				t.Fatalf("sums differ:\n got %v\nwant %v", got, want)
			}
			if s.RowGroups != 6 {
				t.Fatalf("%d row groups read", s.RowGroups)
			}
			// One listing and one read per file, and a request for each
			// row group of the files not kept (whose six row groups may
			// be coalesced into fewer).
			fetched := 3 - c.given
			if s.Fetch.BytesGiven <= 0 || s.Requests < 1+3+int64(min(fetched, 1)) || (fetched == 0) != (s.Fetch.Requests == 0) {
				t.Errorf("%d requests (%d by fetch), %d bytes given, for %d files read whole", s.Requests, s.Fetch.Requests, s.Fetch.BytesGiven, c.given)
			}
			if c.given == 3 && s.Requests != 4 {
				t.Errorf("%d requests, want the listing and 3 reads", s.Requests)
			}
		})
	}
	t.Run("large file", func(t *testing.T) {
		st, files := genStore(t, "lineitem", gen.Options{Rows: 60_000, Files: 1, RowGroupRows: 15_000, Seed: 3})
		if int64(len(files[0])) <= wholeFile {
			t.Fatalf("a file of %d bytes is small", len(files[0]))
		}
		got, s := scanAll(t, st, "lineitem/", Options{Mem: checked(t)})
		if got.String() != reference(t, files, nil, nil).String() {
			t.Fatal("sums differ")
		}
		if s.Fetch.BytesGiven != 0 || s.Fetch.Requests == 0 {
			t.Errorf("%d bytes given, %d requests by fetch: a large file was kept", s.Fetch.BytesGiven, s.Fetch.Requests)
		}
	})
}

// gateDriver holds every data read at or past from until open is closed,
// and records the offset of every data read in the order they came.
type gateDriver struct {
	store.Driver
	from int64
	open chan struct{}

	mu   sync.Mutex
	offs []int64
}

func (d *gateDriver) ReadRange(ctx context.Context, key string, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	if r.Off >= 0 { // not a footer's suffix read
		d.mu.Lock()
		d.offs = append(d.offs, r.Off)
		d.mu.Unlock()
		if r.Off >= d.from {
			select {
			case <-d.open:
			case <-ctx.Done():
				return nil, store.ObjectInfo{}, ctx.Err()
			}
		}
	}
	return d.Driver.ReadRange(ctx, key, r, o)
}

// TestFirstRowGroupFirst: the first row group's batches are decoded and
// delivered while every read of the row groups behind it is still held
// back: decoding starts on the head of the dataset while the rest streams
// in, and a slow tail does not hold up the head. (Which request reaches
// the store first is up to the goroutines that make them; fetch's
// TestHeadFirst checks the order it launches them in.)
func TestFirstRowGroupFirst(t *testing.T) {
	inner, files := genStore(t, "lineitem", gen.Options{Rows: 60_000, Files: 1, RowGroupRows: 7500, Seed: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ds, err := Open(ctx, inner, "lineitem/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.RowGroups() != 8 || ds.files[0].data != nil {
		t.Fatalf("%d row groups, file kept whole: %v", ds.RowGroups(), ds.files[0].data != nil)
	}
	g0 := ds.groups[0].merged
	end := g0[len(g0)-1].Off + g0[len(g0)-1].Len
	gd := &gateDriver{Driver: inner.Driver(), from: end, open: make(chan struct{})}
	st := store.New(gd, inner.URL(""))
	ds, err = Open(ctx, st, "lineitem/", Options{Mem: checked(t), BatchRows: 2500})
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Scan(ctx)
	defer s.Close()
	sum := newSummer()
	first := true
	for s.Next() {
		b := s.Batch()
		if first {
			// Every read past the first row group is still held.
			if b.Pos.RowGroup != 0 {
				t.Errorf("first batch from row group %d", b.Pos.RowGroup)
			}
			gd.mu.Lock()
			offs := append([]int64(nil), gd.offs...)
			gd.mu.Unlock()
			if !slices.ContainsFunc(offs, func(o int64) bool { return o < end }) {
				t.Errorf("data reads at %v: none of the first row group's (which ends at %d)", offs, end)
			}
			close(gd.open)
			first = false
		}
		sum.add(b.RecordBatch)
		b.Release()
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if first {
		t.Fatal("no batch")
	}
	// The values, in dataset order, through an ordered scan.
	if got := sum.sums(); got.rows != 60_000 {
		t.Errorf("%d rows", got.rows)
	}
	ds2, err := Open(ctx, st, "lineitem/", Options{Mem: checked(t), Ordered: true})
	if err != nil {
		t.Fatal(err)
	}
	s2 := ds2.Scan(ctx)
	defer s2.Close()
	if got, _ := collect(t, s2); got.String() != reference(t, files, nil, nil).String() {
		t.Error("sums differ")
	}
}

// TestSmallFileReplaced: a file read whole at Open is scanned as it was
// then, even when replaced before the scan: one version, never a mix.
func TestSmallFileReplaced(t *testing.T) {
	st, files := genStore(t, "lineitem", gen.Options{Rows: 4000, Files: 2, Seed: 4, RowGroupRows: 1000})
	s := scanReplaced(t, st, files, Options{Mem: checked(t)})
	defer s.Close()
	got, _ := collect(t, s)
	if want := reference(t, files, nil, nil); got.String() != want.String() {
		t.Fatalf("scan:      %v\nreference: %v", got, want)
	}
	if st := s.Stats(); st.Fetch.Requests != 0 {
		t.Errorf("%d requests after Open", st.Fetch.Requests)
	}
}
