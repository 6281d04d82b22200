package startgc

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// TestFirstCollectionRestoresPace: the collector is off from init until
// the first collection, whose finalizer puts GOGC=100 and the previous
// memory limit back.
func TestFirstCollectionRestoresPace(t *testing.T) {
	if !active {
		t.Skip("GOGC is set: the package changes nothing")
	}
	if p := gcPercent(); p != -1 {
		t.Fatalf("GC percent %d before the first collection, want -1 (off)", p)
	}
	if l := debug.SetMemoryLimit(-1); l != min(prevLim, startLimit) {
		t.Fatalf("memory limit %d before the first collection, want %d", l, min(prevLim, startLimit))
	}
	runtime.GC()
	for deadline := time.Now().Add(10 * time.Second); gcPercent() != 100; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d after the first collection, want 100", gcPercent())
		}
	}
	if l := debug.SetMemoryLimit(-1); l != prevLim {
		t.Fatalf("memory limit %d after the first collection, want %d", l, prevLim)
	}
	Restore() // a second time changes nothing
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d", p)
	}
}
