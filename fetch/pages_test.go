package fetch

import (
	"testing"
	"unsafe"

	"github.com/sluice-data/sluice/mempool"
)

// Pages come from the pool the Fetcher was given and go back to it when
// released, so a Fetcher dropped afterwards holds none of the pool's
// memory; without a pool they are kept for reuse up to the budget.
func TestPagesFromPool(t *testing.T) {
	pool := mempool.New(1 << 20)
	pg := newPages(64*KiB, pool)
	got, _ := pg.get(3)
	last := unsafe.SliceData(got[2])
	pg.put(got)
	if len(pg.free) != 0 {
		t.Fatalf("%d pages kept by the fetcher, want them in the pool", len(pg.free))
	}
	if b := pool.AllocateDirty(pg.size); unsafe.SliceData(b) != last {
		t.Error("a released page did not go back to the pool")
	}

	plain := newPages(64*KiB, nil) // 1 KiB pages, 64 kept
	got, fresh := plain.get(plain.keep + 1)
	if fresh != int64(len(got)*plain.size) {
		t.Fatalf("fresh %d bytes, want %d", fresh, len(got)*plain.size)
	}
	plain.put(got)
	if len(plain.free) != plain.keep {
		t.Fatalf("%d pages kept, want %d", len(plain.free), plain.keep)
	}
	if _, fresh := plain.get(plain.keep); fresh != 0 {
		t.Errorf("%d fresh bytes after a put: kept pages not reused", fresh)
	}
}
