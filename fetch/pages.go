package fetch

import (
	"sync"

	"github.com/sluice-data/sluice/mempool"
)

// pages hands out fixed-size pages and keeps released ones for reuse:
// on these VMs the first touch of fresh memory costs more than the copy
// that fills it, so a steady scan should stop allocating once warm.
// It keeps at most keep pages free, so memory held by the Fetcher between
// plans stays within one plan's budget.
type pages struct {
	size int
	keep int
	mem  *mempool.Pool // where pages come from and go back to; nil: the Go heap and free

	mu        sync.Mutex
	free      [][]byte
	allocated int64 // bytes ever allocated, for Stats
}

// pageSize fits the page to the budget: large enough that a 16 MiB part is
// few pages, small enough that a budget holds many units.
func pageSize(memory int64) int {
	size := 256 << 10
	for size > 4<<10 && int64(size)*64 > memory {
		size /= 2
	}
	return size
}

func newPages(memory int64, mem *mempool.Pool) *pages {
	size := pageSize(memory)
	return &pages{size: size, keep: int(max(memory/int64(size), 1)), mem: mem}
}

// count is how many pages n bytes take.
func (p *pages) count(n int64) int { return int((n + int64(p.size) - 1) / int64(p.size)) }

// get returns n pages and how many bytes of them were freshly allocated
// (taken from the pool, when there is one: what the pool reused is its
// own count).
func (p *pages) get(n int) ([][]byte, int64) {
	out := make([][]byte, n)
	if p.mem != nil {
		for i := range out {
			out[i] = p.mem.AllocateDirty(p.size)
		}
		fresh := int64(n) * int64(p.size)
		p.mu.Lock()
		p.allocated += fresh
		p.mu.Unlock()
		return out, fresh
	}
	p.mu.Lock()
	reuse := min(n, len(p.free))
	copy(out, p.free[len(p.free)-reuse:])
	clear(p.free[len(p.free)-reuse:])
	p.free = p.free[:len(p.free)-reuse]
	fresh := int64(n-reuse) * int64(p.size)
	p.allocated += fresh
	p.mu.Unlock()
	for i := reuse; i < n; i++ {
		out[i] = make([]byte, p.size)
	}
	return out, fresh
}

// put takes released pages back: into the pool when there is one (so a
// Fetcher dropped with pages in hand leaks none of the pool's), else onto
// the free list, up to keep.
func (p *pages) put(pp [][]byte) {
	if p.mem != nil {
		for _, pg := range pp {
			p.mem.Free(pg)
		}
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pg := range pp {
		if len(p.free) >= p.keep {
			return
		}
		p.free = append(p.free, pg)
	}
}
