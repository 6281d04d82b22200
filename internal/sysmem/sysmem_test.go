package sysmem

import (
	"runtime"
	"testing"
)

// TestTotalMemory: on Linux the machine's memory is read, and it is more than
// this process already has from the system.
func TestTotalMemory(t *testing.T) {
	n := Total()
	if runtime.GOOS != "linux" {
		t.Skipf("reads the machine's memory on Linux only (got %d)", n)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if n <= int64(ms.Sys) {
		t.Fatalf("Total %d, but the process has %d from the system", n, ms.Sys)
	}
}
