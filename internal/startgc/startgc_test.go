package startgc

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/sluice-data/sluice/internal/await"
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
	// The finalizer runs on the runtime's goroutine, which tells no one.
	await.Until(t, "the first collection's finalizer to put GC percent 100 back", func() bool { return gcPercent() == 100 })
	if l := debug.SetMemoryLimit(-1); l != prevLim {
		t.Fatalf("memory limit %d after the first collection, want %d", l, prevLim)
	}
	Restore() // a second time changes nothing
	if p := gcPercent(); p != 100 {
		t.Fatalf("GC percent %d", p)
	}
}
