package arrowtest

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// KnownLeaks are allocation sites inside arrow-go v18.8.0 that never give
// their memory back, whoever drives the reader (pqarrow.ReadTable on its
// own leaks the same): the DELTA_BINARY_PACKED decoder's buffer of
// miniblock bit widths, which has no Release. Files with delta-encoded
// columns therefore leave 64 bytes per decoder behind.
var KnownLeaks = []string{"encoding.(*deltaBitPackDecoder["}

// LeakChecker is an allocator that remembers where each outstanding
// allocation was made, and at the end of the test fails it for any still
// outstanding that is not one of KnownLeaks.
type LeakChecker struct {
	mem memory.Allocator
	mu  sync.Mutex
	out map[*byte]allocation
}

type allocation struct {
	size int
	pcs  []uintptr
}

// LeakChecked returns a LeakChecker that checks when the test ends.
func LeakChecked(t testing.TB) *LeakChecker {
	l := &LeakChecker{mem: memory.NewGoAllocator(), out: map[*byte]allocation{}}
	t.Cleanup(func() { l.check(t) })
	return l
}

func (l *LeakChecker) record(b []byte) {
	if len(b) == 0 {
		return
	}
	pcs := make([]uintptr, 32)
	pcs = pcs[:runtime.Callers(3, pcs)]
	l.mu.Lock()
	l.out[unsafe.SliceData(b)] = allocation{size: len(b), pcs: pcs}
	l.mu.Unlock()
}

func (l *LeakChecker) forget(b []byte) {
	if len(b) == 0 {
		return
	}
	l.mu.Lock()
	delete(l.out, unsafe.SliceData(b))
	l.mu.Unlock()
}

func (l *LeakChecker) Allocate(n int) []byte {
	b := l.mem.Allocate(n)
	l.record(b)
	return b
}

func (l *LeakChecker) Reallocate(n int, b []byte) []byte {
	l.forget(b)
	b = l.mem.Reallocate(n, b)
	l.record(b)
	return b
}

func (l *LeakChecker) Free(b []byte) {
	l.forget(b)
	l.mem.Free(b)
}

func (l *LeakChecker) check(t testing.TB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	known, knownBytes := 0, 0
	for _, a := range l.out {
		frames := runtime.CallersFrames(a.pcs)
		var stack []string
		isKnown := false
		for {
			f, more := frames.Next()
			stack = append(stack, f.Function)
			for _, k := range KnownLeaks {
				if strings.Contains(f.Function, k) {
					isKnown = true
				}
			}
			if !more {
				break
			}
		}
		if isKnown {
			known++
			knownBytes += a.size
			continue
		}
		t.Errorf("leaked %d bytes allocated at\n\t%s", a.size, strings.Join(stack, "\n\t"))
	}
	if known > 0 {
		t.Logf("%d allocations (%d bytes) left behind by arrow-go's known leaks", known, knownBytes)
	}
}
