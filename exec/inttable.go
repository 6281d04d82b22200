package exec

import (
	"math/bits"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// intTable maps int64 keys to the first row of their chain in a join's
// right side: open addressing with linear probing over two flat arrays,
// which a probe of millions of keys walks several times faster than a
// Go map (no hashing of bytes, no groups of control words).
type intTable struct {
	keys  []int64
	rows  []int32 // the row + 1; 0 marks an empty slot
	shift uint
	mask  uint64
	n     int // keys in the table
	m     *tableMem
}

// newIntTable makes a table sized for n keys, at most half full, its
// arrays from m; past n keys it grows.
func newIntTable(m *tableMem, n int) *intTable {
	size := 16
	if n > 4 {
		size = 1 << bits.Len(uint(2*n-1))
	}
	return &intTable{
		keys:  tableSlice[int64](m, size),
		rows:  tableSlice[int32](m, size),
		shift: uint(64 - bits.TrailingZeros(uint(size))),
		mask:  uint64(size - 1),
		m:     m,
	}
}

// slot is where k's search starts: Fibonacci hashing, which spreads
// runs of consecutive keys (order numbers) over the table.
func (t *intTable) slot(k int64) uint64 { return (uint64(k) * 0x9E3779B97F4A7C15) >> t.shift }

func (t *intTable) get(k int64) (int32, bool) {
	for i := t.slot(k); ; i = (i + 1) & t.mask {
		r := t.rows[i]
		if r == 0 {
			return 0, false
		}
		if t.keys[i] == k {
			return r - 1, true
		}
	}
}

// put sets k's row.
func (t *intTable) put(k int64, row int32) {
	for i := t.slot(k); ; i = (i + 1) & t.mask {
		if t.rows[i] == 0 {
			t.keys[i], t.rows[i] = k, row+1
			if t.n++; 2*t.n > len(t.keys) {
				t.grow()
			}
			return
		}
		if t.keys[i] == k {
			t.rows[i] = row + 1
			return
		}
	}
}

// grow doubles the table, and gives the old arrays back to m.
func (t *intTable) grow() {
	old := *t
	*t = *newIntTable(t.m, len(old.keys))
	for i, r := range old.rows {
		if r != 0 {
			t.put(old.keys[i], r-1)
		}
	}
	tableFree(t.m, old.keys)
	tableFree(t.m, old.rows)
}

// tableMem is where a join's table keeps its arrays: buffers of the
// run's allocator, not the Go heap. A spilled join builds a table for
// each of its parts, and the collector, which lets its heap grow to
// twice what is live, would hold two tables' worth and more of garbage
// between them; from the run's pool each part's table reuses the last
// one's buffers, and the bytes are counted as Arrow's are.
type tableMem struct {
	mem  memory.Allocator
	bufs [][]byte
}

// tableSlice is n zeroed values of T (plain values: no pointers, which
// the collector would not see) in a buffer of m.
func tableSlice[T int32 | int64 | rowRef](m *tableMem, n int) []T {
	var zero T
	b := m.mem.Allocate(n * int(unsafe.Sizeof(zero)))
	m.bufs = append(m.bufs, b)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// tableFree gives back a slice tableSlice made, before m's release.
func tableFree[T int32 | int64 | rowRef](m *tableMem, s []T) {
	p := unsafe.Pointer(unsafe.SliceData(s))
	for i, b := range m.bufs {
		if unsafe.Pointer(unsafe.SliceData(b)) == p {
			m.mem.Free(b)
			m.bufs = slices.Delete(m.bufs, i, i+1)
			return
		}
	}
}

func (m *tableMem) release() {
	for _, b := range m.bufs {
		m.mem.Free(b)
	}
	m.bufs = nil
}
