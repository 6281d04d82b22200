package scan

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

// flakyDriver throttles the first two listings and the first two footer
// reads of every file, stalls the third footer read of one file mid-body
// for 10s (unless cancelled), and throttles the fourth, the duplicate
// raced against the stall.
type flakyDriver struct {
	store.Driver
	stallKey string

	mu    sync.Mutex
	lists int
	reads map[string]int
}

func (d *flakyDriver) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	d.mu.Lock()
	d.lists++
	n := d.lists
	d.mu.Unlock()
	if n <= 2 {
		return sim.ErrSlowDown
	}
	return d.Driver.List(ctx, prefix, fn)
}

func (d *flakyDriver) ReadRange(ctx context.Context, key string, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	if r.Off >= 0 { // not a footer's suffix read
		return d.Driver.ReadRange(ctx, key, r, o)
	}
	d.mu.Lock()
	d.reads[key]++
	n := d.reads[key]
	d.mu.Unlock()
	switch {
	case n <= 2:
		return nil, store.ObjectInfo{}, sim.ErrSlowDown
	case n == 3 && key == d.stallKey:
		rc, info, err := d.Driver.ReadRange(ctx, key, r, o)
		if err != nil {
			return rc, info, err
		}
		return &stalledBody{ctx: ctx, rc: rc}, info, nil
	case n == 4 && key == d.stallKey:
		return nil, store.ObjectInfo{}, sim.ErrSlowDown
	}
	return d.Driver.ReadRange(ctx, key, r, o)
}

// stalledBody gives one byte, then nothing for 10s or until its context
// ends.
type stalledBody struct {
	ctx  context.Context
	rc   io.ReadCloser
	sent bool
}

func (b *stalledBody) Read(p []byte) (int, error) {
	if !b.sent && len(p) > 0 {
		b.sent = true
		return b.rc.Read(p[:1])
	}
	select {
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	case <-time.After(10 * time.Second):
		return b.rc.Read(p)
	}
}

func (b *stalledBody) Close() error { return b.rc.Close() }

// Throttled listings and footer reads are retried and a stalled footer
// read is raced (by a duplicate replaced in turn when it is throttled),
// so Open succeeds promptly with the same data.
func TestOpenRetriesAndRaces(t *testing.T) {
	mem, files := genStore(t, "lineitem", gen.Options{Rows: 20_000, Files: 3, RowGroupRows: 5000})
	d := &flakyDriver{Driver: mem.Driver(), stallKey: "lineitem/part-00001.parquet", reads: map[string]int{}}
	st := store.New(d, "mem://flaky/")
	start := time.Now()
	got, stats := scanAll(t, st, "lineitem/", Options{Mem: checked(t)})
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("took %v: the stalled footer read was waited for", el)
	}
	if want := reference(t, files, nil, nil); got.String() != want.String() {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if stats.Files != 3 || d.lists != 3 {
		t.Errorf("%d files after %d listings", stats.Files, d.lists)
	}
}

// countingDriver counts listings.
type countingDriver struct {
	store.Driver
	mu    sync.Mutex
	lists int
}

func (d *countingDriver) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	d.mu.Lock()
	d.lists++
	d.mu.Unlock()
	return d.Driver.List(ctx, prefix, fn)
}

// OpenObject reads what Open of the same key reads, without listing it:
// its size is given, so the first request is the footer's.
func TestOpenObjectDoesNotList(t *testing.T) {
	mem, files := genStore(t, "lineitem", gen.Options{Rows: 20_000, Files: 1, RowGroupRows: 5000})
	d := &countingDriver{Driver: mem.Driver()}
	st := store.New(d, "mem://counting/")
	key := "lineitem/part-00000.parquet"
	ds, err := OpenObject(context.Background(), st, store.ObjectInfo{Key: key, Size: int64(len(files[0]))}, Options{Mem: checked(t)})
	if err != nil {
		t.Fatal(err)
	}
	sc := ds.Scan(context.Background())
	got, _ := collect(t, sc)
	sc.Close()
	if d.lists != 0 {
		t.Errorf("OpenObject listed %d times", d.lists)
	}
	if want := reference(t, files, nil, nil); got.String() != want.String() {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if _, err := OpenObject(context.Background(), st, store.ObjectInfo{Key: "lineitem/gone.parquet", Size: 1000}, Options{Mem: checked(t)}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an object that is not there: %v, want not found", err)
	}
}
