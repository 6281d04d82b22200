package main

import (
	"os"
	"runtime/debug"
)

// heapSlack is the room a soft heap limit leaves above a scan's --memory
// budget for the Go runtime's own memory and garbage not yet collected.
// The binary's resident pages (some 36 MiB) come on top, and the process
// stays within budget + 64 MiB; decoding into a reusing pool makes little
// garbage, so the collector seldom runs for want of room.
const heapSlack = 16 << 20

// defaultScanMemory is sluice scan's budget when --memory is not given.
const defaultScanMemory = 512 << 20

// boundHeap puts a soft limit of budget + heapSlack + extra on the Go heap,
// unless GOMEMLIMIT is set: by default the collector lets the heap grow to
// twice what is live, and a scan keeps most of its budget live. extra is
// what the output holds beyond the scan (a multipart part being uploaded).
// The returned func puts the previous limit back.
func boundHeap(budget, extra int64) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	prev := debug.SetMemoryLimit(budget + heapSlack + extra)
	return func() { debug.SetMemoryLimit(prev) }
}
