package main

import (
	"os"
	"runtime/debug"
)

// heapSlack is the room a soft heap limit leaves above a scan's --memory
// budget for the Go runtime's own memory and garbage not yet collected.
// The binary's resident pages and the runtime's (some 55 MiB: Kubernetes'
// client and Arrow's compute kernels are linked in) come on top, and the
// process stays within about budget + 64 MiB; decoding into a reusing
// pool makes little garbage, so the collector seldom runs for want of room.
const heapSlack = 8 << 20

// defaultScanMemory is sluice scan's budget when --memory is not given.
const defaultScanMemory = 512 << 20

// boundHeap puts a soft limit of budget + heapSlack on the Go heap,
// unless GOMEMLIMIT is set: by default the collector lets the heap grow to
// twice what is live, and a scan keeps most of its budget live. The
// returned func puts the previous limit back.
func boundHeap(budget int64) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(budget + heapSlack)
	return func() { debug.SetMemoryLimit(prev) }
}
