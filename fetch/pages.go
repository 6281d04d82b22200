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
	mem  *mempool.Pool // where fresh pages come from; nil: the Go heap

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

// get returns n pages and how many bytes of them were freshly allocated.
func (p *pages) get(n int) ([][]byte, int64) {
	out := make([][]byte, n)
	p.mu.Lock()
	reuse := min(n, len(p.free))
	copy(out, p.free[len(p.free)-reuse:])
	clear(p.free[len(p.free)-reuse:])
	p.free = p.free[:len(p.free)-reuse]
	fresh := int64(n-reuse) * int64(p.size)
	p.allocated += fresh
	p.mu.Unlock()
	for i := reuse; i < n; i++ {
		if p.mem != nil {
			out[i] = p.mem.Allocate(p.size)
		} else {
			out[i] = make([]byte, p.size)
		}
	}
	return out, fresh
}

func (p *pages) put(pp [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pg := range pp {
		switch {
		case len(p.free) < p.keep:
			p.free = append(p.free, pg)
		case p.mem != nil:
			p.mem.Free(pg)
		}
	}
}
