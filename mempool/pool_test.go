package mempool

import (
	"testing"
	"unsafe"
)

func TestPoolReusesZeroedAlignedBuffers(t *testing.T) {
	p := New(1 << 20)
	b := p.Allocate(100_000)
	if len(b) != 100_000 || cap(b) != len(b) {
		t.Fatalf("len %d cap %d, want both 100000", len(b), cap(b))
	}
	if uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
		t.Fatal("not 64-byte aligned")
	}
	for i := range b {
		b[i] = 0xff
	}
	first := &b[0]
	p.Free(b)
	c := p.Allocate(90_000) // same size class (128 KiB)
	if &c[0] != first {
		t.Fatal("a freed buffer of the same class was not reused")
	}
	for i, x := range c {
		if x != 0 {
			t.Fatalf("byte %d of a reused buffer is %#x, want 0", i, x)
		}
	}
	// Growing within the class stays in place and zeroes what it adds.
	c[0] = 7
	d := p.Reallocate(120_000, c[:10])
	if &d[0] != first || d[0] != 7 || len(d) != 120_000 {
		t.Fatal("a Reallocate within the size class moved or lost data")
	}
	for i, x := range d[10:] {
		if x != 0 {
			t.Fatalf("byte %d that Reallocate grew by is %#x, want 0", 10+i, x)
		}
	}
	// Beyond the class it moves, keeping the contents.
	e := p.Reallocate(300_000, d)
	if e[0] != 7 || len(e) != 300_000 {
		t.Fatal("Reallocate lost data")
	}
	p.Free(e)
	p.Free(e) // twice: ignored
	p.Free(make([]byte, 1<<17))
	if p.kept != 128<<10+512<<10 {
		t.Fatalf("kept %d bytes, want the two buffers it handed out", p.kept)
	}
}

func TestPoolKeepsAtMostItsBudget(t *testing.T) {
	p := New(1 << 20)
	var bs [][]byte
	for range 8 {
		bs = append(bs, p.Allocate(512<<10))
	}
	for _, b := range bs {
		p.Free(b)
	}
	if p.kept > 1<<20 {
		t.Fatalf("kept %d bytes, more than its 1 MiB", p.kept)
	}
	if small := p.Allocate(10); len(small) != 10 {
		t.Fatal("small allocation")
	}
}

// TestMappedPool: a mapped Pool hands out zeroed, aligned buffers and
// reuses them like any Pool; a buffer freed past its budget gives its
// pages back and reads as zero when handed out again.
func TestMappedPool(t *testing.T) {
	p := NewMapped(512 << 10)
	a, b := p.Allocate(500_000), p.Allocate(500_000)
	for _, buf := range [][]byte{a, b} {
		if uintptr(unsafe.Pointer(&buf[0]))%64 != 0 {
			t.Fatal("not 64-byte aligned")
		}
		for i, x := range buf {
			if x != 0 {
				t.Fatalf("byte %d of a fresh buffer is %#x", i, x)
			}
		}
		for i := range buf {
			buf[i] = 0xff
		}
	}
	pa, pb := &a[0], &b[0]
	p.Free(a) // kept
	p.Free(b) // past the budget
	if p.kept != 512<<10 {
		t.Fatalf("kept %d bytes, want 512 KiB", p.kept)
	}
	c, d := p.Allocate(500_000), p.Allocate(400_000)
	if &c[0] != pa {
		t.Fatal("the kept buffer was not reused first")
	}
	if canMap && &d[0] != pb {
		t.Fatal("the buffer freed past the budget was not reused")
	}
	for _, buf := range [][]byte{c, d} {
		for i, x := range buf {
			if x != 0 {
				t.Fatalf("byte %d of a reused buffer is %#x, want 0", i, x)
			}
		}
	}
	// A buffer larger than a chunk has a mapping of its own.
	big := p.Allocate(40 << 20)
	big[len(big)-1] = 1
	p.Free(big)
	p.Free(c)
	p.Free(d)
}
