package cli

import (
	"os"
	"runtime/debug"

	"github.com/sluice-data/sluice/internal/startgc"
)

// boundHeap puts a soft limit of budget bytes on the Go heap, unless
// GOMEMLIMIT is set: by default the collector lets the heap grow to twice
// what is live, and a scan keeps most of its budget live. What a scan and
// its output hold is all counted in the budget (the pool's kept buffers
// too), and decoding into a reusing pool makes little garbage, so the
// collector seldom runs for want of room. The runtime's own memory and the
// binary's resident pages (some 55 MiB: Kubernetes' client and Arrow's
// compute kernels are linked in) come on top. run gives the whole budget,
// its stages holding three quarters of it together (exec.Options.Memory);
// scan and a fanned-out run's workers give their own shares. The returned
// func puts the previous limit back.
func boundHeap(budget int64) (restore func()) {
	startgc.Restore()
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(budget)
	return func() { debug.SetMemoryLimit(prev) }
}
