package mempool

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestReusedBufferHoldsWhatItIsAskedFor: a kept buffer handed out for
// much less than its size class gives back the pages past what is asked
// for, so that a caller counting its buffers' lengths counts what is
// resident; the bytes asked for stay zeroed, and the buffer works whole
// again when grown within its class.
func TestReusedBufferHoldsWhatItIsAskedFor(t *testing.T) {
	p := NewMapped(4 << 20)
	a := p.Allocate(2 << 20) // a class of 2 MiB, resident whole once written
	for i := range a {
		a[i] = 0xff
	}
	pa := &a[0]
	p.Free(a)
	if resident(t, unsafe.Slice(pa, 2<<20)) != 512 {
		t.Fatal("the kept buffer is not resident whole")
	}
	b := p.Allocate(1<<20 + 1) // the same class
	if &b[0] != pa {
		t.Fatal("the kept buffer was not reused")
	}
	if got, want := resident(t, unsafe.Slice(pa, 2<<20)), (1<<20+1+pageSize-1)/pageSize; got != want {
		t.Fatalf("%d pages resident for %d bytes asked for, want %d", got, len(b), want)
	}
	for i, x := range b {
		if x != 0 {
			t.Fatalf("byte %d is %#x, want 0", i, x)
		}
	}
	b = p.Reallocate(2<<20, b)
	if &b[0] != pa {
		t.Fatal("grown within its class, the buffer moved")
	}
	for i, x := range b {
		if x != 0 {
			t.Fatalf("byte %d of the grown buffer is %#x, want 0", i, x)
		}
	}
	p.Free(b)
}

// resident counts the pages of b in memory.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+pageSize-1)/pageSize)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
