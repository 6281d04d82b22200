//go:build !unix

package gen

import "time"

// cpuTime is unknown here; the benchmarks then omit their per-core rate.
func cpuTime() time.Duration { return 0 }
