package fetch

import (
	"testing"
	"unsafe"

	"github.com/sluice-data/sluice/mempool"
)

// Pages come from the pool the Fetcher was given, are kept for reuse up
// to the budget, and go back to the pool past it.
func TestPagesFromPool(t *testing.T) {
	pool := mempool.New(1 << 20)
	pg := newPages(64*KiB, pool) // 1 KiB pages, 64 kept
	got, fresh := pg.get(pg.keep + 1)
	if fresh != int64(len(got)*pg.size) {
		t.Fatalf("fresh %d bytes, want %d", fresh, len(got)*pg.size)
	}
	last := unsafe.SliceData(got[len(got)-1])
	pg.put(got)
	if len(pg.free) != pg.keep {
		t.Fatalf("%d pages kept, want %d", len(pg.free), pg.keep)
	}
	// The page past the budget went back to the pool: its next buffer of
	// that size is the same memory.
	if b := pool.Allocate(pg.size); unsafe.SliceData(b) != last {
		t.Error("the page past the budget was not given back to the pool")
	}
	again, fresh := pg.get(pg.keep)
	if fresh != 0 || len(again) != pg.keep {
		t.Errorf("%d fresh bytes for %d pages after a put: kept pages not reused", fresh, len(again))
	}
}
