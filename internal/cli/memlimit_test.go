package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestBoundHeap(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Setenv("GOMEMLIMIT", "")
	restore := boundHeap(100 << 20)
	if got, want := debug.SetMemoryLimit(-1), int64(100<<20); got != want {
		t.Errorf("limit %d, want the budget, %d", got, want)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("limit %d after restore, want %d", got, before)
	}

	// GOMEMLIMIT is the user's word: left as the runtime read it.
	t.Setenv("GOMEMLIMIT", "1GiB")
	restore = boundHeap(100 << 20)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set, limit %d, want %d", got, before)
	}
	restore()
}

// TestScanSmallMemory: a budget below what one row group takes still
// scans everything, says so in one warning, and exits 0.
func TestScanSmallMemory(t *testing.T) {
	dir := lineitemDir(t)
	r := sluice(t, nil, "scan", dir, "--memory", "1MiB", "-q")
	if r.code != 0 || r.stdout != "30000 rows\n" {
		t.Fatalf("scan --memory 1MiB: %+v", r)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "warning: --memory 1MiB is less than") {
		t.Fatalf("stderr %q: want one warning naming the budget", r.stderr)
	}
	r = sluice(t, nil, "scan", dir, "--memory", "64MiB", "-q")
	if r.code != 0 || r.stdout != "30000 rows\n" || r.stderr != "" {
		t.Fatalf("scan --memory 64MiB: %+v", r)
	}
}
