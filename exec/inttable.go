package exec

import (
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// intTable maps int64 keys to the first row of their chain in a join's
// right side (or to a group): open addressing with linear probing over
// one flat array of slots, which a probe of millions of keys walks
// several times faster than a Go map (no hashing of bytes, no groups of
// control words). A slot holds its key beside its row: a table of
// millions of keys is far larger than the caches, and a probe then costs
// one miss, where keys and rows apart cost two.
type intTable struct {
	slots []intSlot
	shift uint
	mask  uint64
	n     int // keys in the table
	m     *tableMem
	// bits, where set (withBits), has bit k-lo for each key k: a join's
	// probe skips the table for a key whose bit is clear.
	lo   int64
	bits []uint64
}

type intSlot struct {
	key int64
	row int32 // the row + 1; 0 marks an empty slot
}

// newIntTable makes a table sized for n keys, at most three quarters
// full, its array from m; past n keys it grows.
func newIntTable(m *tableMem, n int) *intTable {
	size := tableSize(n)
	return &intTable{slots: tableSlice[intSlot](m, size), shift: uint(64 - bits.TrailingZeros(uint(size))), mask: uint64(size - 1), m: m}
}

// tableSize is the slots for n keys: a power of two, at most three
// quarters full. Linear probing is still short there (at most about 2.5
// slots a hit, 8.5 a miss, and an integer table holds four slots a cache
// line), and a half-full limit makes a join of 1.5 M keys take 64 MB
// instead of 32, the first touch of each page of which costs more than
// the probes (TPC-H Q12).
func tableSize(n int) int {
	if n > 4 {
		return 1 << bits.Len(uint((4*n+2)/3-1))
	}
	return 16
}

// full says a table of size slots holding n keys is to grow.
func full(n, size int) bool { return 4*n > 3*size }

// slot is where k's search starts: Fibonacci hashing, which spreads
// runs of consecutive keys (order numbers) over the table.
func (t *intTable) slot(k int64) uint64 { return (uint64(k) * 0x9E3779B97F4A7C15) >> t.shift }

func (t *intTable) get(k int64) (int32, bool) {
	for i := t.slot(k); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.row == 0 {
			return 0, false
		}
		if s.key == k {
			return s.row - 1, true
		}
	}
}

// put sets k's row.
func (t *intTable) put(k int64, row int32) {
	for i := t.slot(k); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.row == 0 {
			s.key, s.row = k, row+1
			if t.n++; full(t.n, len(t.slots)) {
				t.grow()
			}
			return
		}
		if s.key == k {
			s.row = row + 1
			return
		}
	}
}

// reset empties the table, keeping its array.
func (t *intTable) reset() {
	clear(t.slots)
	t.n = 0
	if t.bits != nil {
		tableFree(t.m, t.bits)
		t.bits = nil
	}
}

// smallBits is a bitmap's span that is worth keeping however few the
// keys: 1 MiB, a core's L2 cache here. A few hundred keys spread over a
// dimension's range (TPC-H Q17's parts of one brand and container) fit
// a table far smaller, but a bit test is still cheaper than hashing the
// key and reading its slot; and 30 thousand order keys spread over 6
// million (Q12's lineitems, against which its 1.5 million orders are
// cut) take a table as large as the bitmap, of which a probe reads 16
// bytes where the bitmap reads a bit (Q12: 0.20 to 0.18 s).
const smallBits = 1 << 23

// withBits sets bits, once the table holds all its keys, when the keys
// span at most 64 values a slot (the bitmap is then at most half the
// table's size) or fewer than smallBits. A join's right side is often a
// filtered dimension whose keys are few among the left side's (TPC-H Q5's orders of one year
// against every line item): most probes miss, and a miss found in a
// bitmap that fits the caches costs far less than a slot of a table
// that does not.
func (t *intTable) withBits() {
	if t.n == 0 {
		return
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range t.slots {
		if s.row != 0 {
			lo, hi = min(lo, s.key), max(hi, s.key)
		}
	}
	span := uint64(hi) - uint64(lo) // at most 2^64-1, as unsigned
	if span/64 >= uint64(len(t.slots)) && span >= smallBits {
		return
	}
	bits := tableSlice[uint64](t.m, int(span/64)+1)
	for _, s := range t.slots {
		if s.row != 0 {
			d := uint64(s.key) - uint64(lo)
			bits[d>>6] |= 1 << (d & 63)
		}
	}
	t.lo, t.bits = lo, bits
}

// small says the table fits the caches, so that reading slots ahead of
// a probe (touchAhead) only costs: 256 KiB of slots.
func (t *intTable) small() bool { return len(t.slots) <= 1<<14 }

// find is get behind the bitmap: a probe's lookup.
func (t *intTable) find(k int64) (int32, bool) {
	if !t.mayHave(k) {
		return 0, false
	}
	return t.get(k)
}

// mayHave is false when k is surely not in the table (withBits).
func (t *intTable) mayHave(k int64) bool {
	if t.bits == nil {
		return true
	}
	d := uint64(k) - uint64(t.lo)
	return d>>6 < uint64(len(t.bits)) && t.bits[d>>6]&(1<<(d&63)) != 0
}

// grow doubles the table, and gives the old array back to m.
func (t *intTable) grow() {
	old := *t
	*t = *newIntTable(t.m, len(old.slots))
	for _, s := range old.slots {
		if s.row != 0 {
			t.put(s.key, s.row-1)
		}
	}
	tableFree(t.m, old.slots)
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

// tableValue is what a table's arrays hold: plain values, no pointers,
// which the collector would not see in a buffer of the run's allocator.
type tableValue interface {
	byte | int32 | int64 | uint64 | float64 | decimal128.Num | rowRef | intSlot | pairSlot
}

// tableSlice is n zeroed values of T in a buffer of m.
func tableSlice[T tableValue](m *tableMem, n int) []T {
	var zero T
	b := m.mem.Allocate(n * int(unsafe.Sizeof(zero)))
	m.bufs = append(m.bufs, b)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// tableFree gives back a slice tableSlice made, before m's release.
func tableFree[T tableValue](m *tableMem, s []T) {
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

// pairTable is intTable for keys of two integers (joins and groupings
// on two key columns: TPC-H's partsupp and lineitem, l_partkey and
// l_suppkey), which as key bytes are longer than a Go map's fast keys.
type pairTable struct {
	slots []pairSlot
	shift uint
	mask  uint64
	n     int
	m     *tableMem
}

type pairSlot struct {
	a, b int64
	row  int32 // the row + 1; 0 marks an empty slot
}

func newPairTable(m *tableMem, n int) *pairTable {
	size := tableSize(n)
	return &pairTable{slots: tableSlice[pairSlot](m, size), shift: uint(64 - bits.TrailingZeros(uint(size))), mask: uint64(size - 1), m: m}
}

// slot mixes a into b before the multiply that spreads them: TPC-H's
// l_suppkey is a function of l_partkey, and a sum of the two
// multiplied apart clusters such pairs.
func (t *pairTable) slot(a, b int64) uint64 {
	h := uint64(a) * 0x9E3779B97F4A7C15
	h = (h ^ h>>29 + uint64(b)) * 0xC2B2AE3D27D4EB4F
	return h >> t.shift
}

func (t *pairTable) get(a, b int64) (int32, bool) {
	for i := t.slot(a, b); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.row == 0 {
			return 0, false
		}
		if s.a == a && s.b == b {
			return s.row - 1, true
		}
	}
}

func (t *pairTable) put(a, b int64, row int32) {
	for i := t.slot(a, b); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.row == 0 {
			s.a, s.b, s.row = a, b, row+1
			if t.n++; full(t.n, len(t.slots)) {
				t.grow()
			}
			return
		}
		if s.a == a && s.b == b {
			s.row = row + 1
			return
		}
	}
}

// reset empties the table, keeping its array.
func (t *pairTable) reset() {
	clear(t.slots)
	t.n = 0
}

func (t *pairTable) grow() {
	old := *t
	*t = *newPairTable(t.m, len(old.slots))
	for _, s := range old.slots {
		if s.row != 0 {
			t.put(s.a, s.b, s.row-1)
		}
	}
	tableFree(t.m, old.slots)
}
