// Package startgc holds the collector off while a sluice process starts.
// The packages of its binary allocate some 4 MiB as they initialise,
// nearly all of it live (type registries, endpoint tables, kernels), so
// the collection the runtime starts at 4 MiB finds little garbage, and
// with its worker threads and first-touched pages it cost a fifth of the
// start of a short command (`sluice show` of four rows) here.
//
// Until the process has allocated a little more than that (startLimit),
// nothing is collected; the first collection, or Restore, whichever comes
// first, puts the collector back on its usual pace. Import it from main;
// packages initialise in import-path order after their dependencies, so
// its init runs part way through (after some 0.7 of the 2.7 MB that
// initialisation allocates in sluice), early enough that the collection
// due at 4 MiB does not come. With GOGC set it does nothing.
package startgc

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// startLimit is the memory at which the first collection runs.
const startLimit = 32 << 20

var (
	active  bool
	prevLim int64
	once    sync.Once
)

// sentinel is unreachable from the start: the first collection queues
// its finalizer, which restores the pace.
type sentinel struct{ _ *int }

func init() {
	if os.Getenv("GOGC") != "" {
		return
	}
	prevLim = debug.SetMemoryLimit(math.MaxInt64)
	debug.SetMemoryLimit(min(prevLim, startLimit))
	debug.SetGCPercent(-1)
	active = true
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) { Restore() })
}

// Restore puts the collector back on GOGC=100 and the memory limit it had
// (GOMEMLIMIT, or none). Call it before changing either.
func Restore() {
	if !active {
		return
	}
	once.Do(func() {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(prevLim)
	})
}
