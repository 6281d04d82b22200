package mempool

import (
	"syscall"
	"unsafe"
)

const canMap = true

// hugeAlign is the size of a huge page on x86-64 and arm64 (with 4 KiB
// pages): a chunk aligned to it can be backed by huge pages whole.
const hugeAlign = 2 << 20

// mapChunk maps n bytes (a multiple of 2 MiB) of anonymous memory,
// aligned to 2 MiB, and asks for huge pages for it (which the system
// gives when transparent huge pages are "always" or "madvise"; else it
// is plain memory).
func mapChunk(n int) ([]byte, error) {
	m, err := syscall.Mmap(-1, 0, n+hugeAlign, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	shift := int(-uintptr(unsafe.Pointer(unsafe.SliceData(m))) & (hugeAlign - 1))
	b := m[shift : shift+n : shift+n]
	_ = syscall.Madvise(b, 14) // MADV_HUGEPAGE; refused where there are none
	return b, nil
}

// release gives b's pages back to the system; b reads as zero after.
func release(b []byte) {
	_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
}
