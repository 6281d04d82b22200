// Package mempool is a memory.Allocator for Arrow that keeps the buffers
// released to it and hands them out again, so a process that decodes,
// filters and serializes batch after batch reuses the same few pages
// instead of faulting in fresh ones for every batch.
//
// It is not a budget: it never refuses an allocation, and what it keeps
// is bounded, not what it hands out. Make one per run and pass it down
// (exec's Options.Mem, scan's Options.Mem); there is no shared instance.
package mempool

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Pool is a memory.Allocator that keeps the buffers released to it and
// hands them out again, instead of leaving them to the garbage collector.
//
// On these machines the first touch of fresh memory is what costs (page
// faults, then zeroing): a pipeline that decodes, filters and serializes
// batch after batch asks for the same few buffer sizes over and over, and
// with a plain Go allocator each batch lands on fresh pages. A Pool keeps
// the working set to the batches in flight.
//
// Buffers are handed out in power-of-two size classes (from 4 KiB up to
// 64 MiB; others come straight from the Go heap), 64-byte aligned, zeroed
// like Go memory. At most Keep bytes are kept; more is left to the
// garbage collector. A Pool is safe for concurrent use, and is only as
// good as the Release calls that return buffers to it (it remembers the
// buffers it handed out, so one never released stays reachable as long
// as the Pool does).
type Pool struct {
	keep int64

	mu      sync.Mutex
	kept    int64
	classes [numClasses][][]byte // free buffers, each its class's size
	out     map[*byte]int        // buffers handed out: their size class

	// For a mapped Pool (NewMapped): the rest of the current chunk, and
	// free buffers past keep, whose pages went back to the system (zero
	// when touched again).
	mapped bool
	chunk  []byte
	cold   [numClasses][][]byte
}

const (
	minClassBits = 12 // 4 KiB
	maxClassBits = 26 // 64 MiB
	numClasses   = maxClassBits - minClassBits + 1
	alignment    = 64
)

// New returns a Pool that keeps at most keep bytes of released
// buffers (256 MiB when keep <= 0).
func New(keep int64) *Pool {
	if keep <= 0 {
		keep = 256 << 20
	}
	return &Pool{keep: keep, out: map[*byte]int{}}
}

// NewMapped is New for a Pool that lives as long as the process (a
// command's): its buffers are carved from memory mapped in 32 MiB
// chunks that the system may back with 2 MiB huge pages, so a batch's
// buffers take one page fault where 4 KiB pages take hundreds, on
// machines where each fault costs microseconds. Past keep, a freed
// buffer's pages go back to the system and its addresses are reused;
// the chunks themselves are never unmapped. Where no memory can be
// mapped so, it is New.
func NewMapped(keep int64) *Pool {
	p := New(keep)
	p.mapped = canMap
	return p
}

// chunkSize is how much a mapped Pool maps at a time (more for a larger
// buffer).
const chunkSize = 32 << 20

// fresh is a new buffer of n bytes (a class's size), zeroed; called
// with p.mu held.
func (p *Pool) fresh(n int) []byte {
	if !p.mapped {
		p.mu.Unlock()
		buf := make([]byte, n+alignment)
		p.mu.Lock()
		shift := int(-uintptr(unsafe.Pointer(unsafe.SliceData(buf))) & (alignment - 1))
		return buf[shift : shift+n : shift+n]
	}
	if len(p.chunk) < n {
		// A buffer larger than a chunk has a mapping of its own; else the
		// rest of the chunk (never touched, so never resident) is left.
		c, err := mapChunk(max(n, chunkSize))
		if err != nil {
			p.mapped = false
			return p.fresh(n)
		}
		if n >= chunkSize {
			return c[:n:n]
		}
		p.chunk = c
	}
	b := p.chunk[:n:n]
	p.chunk = p.chunk[n:]
	return b
}

// class is the size class of a buffer of n bytes, or -1 for none.
func class(n int) int {
	if n <= 1<<minClassBits {
		if n < 1<<minClassBits/2 {
			return -1 // small: the Go heap does these well
		}
		return 0
	}
	c := bits.Len(uint(n-1)) - minClassBits
	if c >= numClasses {
		return -1
	}
	return c
}

// Allocate returns size zeroed bytes. Like the Go allocator's, the
// slice's capacity is its length (arrow-go's builders rely on it); the
// Pool remembers which size class is behind it.
func (p *Pool) Allocate(size int) []byte { return p.allocate(size, true) }

// AllocateDirty is Allocate for a caller that overwrites every byte
// before reading any (a message body read from a stream, fetched bytes):
// a reused buffer is not zeroed first.
func (p *Pool) AllocateDirty(size int) []byte { return p.allocate(size, false) }

func (p *Pool) allocate(size int, zero bool) []byte {
	c := class(size)
	if c < 0 {
		return memory.DefaultAllocator.Allocate(size)
	}
	p.mu.Lock()
	var full []byte
	if free := p.classes[c]; len(free) > 0 {
		full = free[len(free)-1]
		free[len(free)-1] = nil
		p.classes[c] = free[:len(free)-1]
		p.kept -= int64(len(full))
		if zero {
			clear(full[:size])
		}
	} else if cold := p.cold[c]; len(cold) > 0 {
		full = cold[len(cold)-1] // zero: its pages were given back
		cold[len(cold)-1] = nil
		p.cold[c] = cold[:len(cold)-1]
	} else {
		full = p.fresh(1 << (c + minClassBits))
	}
	p.out[unsafe.SliceData(full)] = c
	p.mu.Unlock()
	return full[:size:size]
}

// Reallocate grows or shrinks b to size bytes, keeping its contents; the
// bytes it grows by are zero. Within b's size class it stays in place.
func (p *Pool) Reallocate(size int, b []byte) []byte {
	if cap(b) > 0 {
		ptr := unsafe.SliceData(b)
		p.mu.Lock()
		c, ours := p.out[ptr]
		p.mu.Unlock()
		if ours && size > 0 && size <= 1<<(c+minClassBits) {
			nb := unsafe.Slice(ptr, size)
			if size > len(b) {
				clear(nb[len(b):])
			}
			return nb
		}
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

// Free takes b back for a later Allocate of its size class; buffers the
// Pool did not hand out are left to the garbage collector.
func (p *Pool) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	ptr := unsafe.SliceData(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ours := p.out[ptr]
	if !ours {
		return
	}
	delete(p.out, ptr)
	n := 1 << (c + minClassBits)
	if p.kept+int64(n) > p.keep {
		if p.mapped {
			b := unsafe.Slice(ptr, n)
			release(b)
			p.cold[c] = append(p.cold[c], b)
		}
		return
	}
	p.kept += int64(n)
	p.classes[c] = append(p.classes[c], unsafe.Slice(ptr, n))
}

var _ memory.Allocator = (*Pool)(nil)

// DirtyBuffer is a buffer of n bytes from mem for a caller that writes
// every one of them before reading any: from a Pool, a reused buffer is
// not zeroed first (clearing it would touch the same bytes once more).
func DirtyBuffer(mem memory.Allocator, n int) *memory.Buffer {
	if p, ok := mem.(*Pool); ok {
		return memory.NewBufferWithAllocator(p.AllocateDirty(n), p)
	}
	b := memory.NewResizableBuffer(mem)
	b.Resize(n)
	return b
}
