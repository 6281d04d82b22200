package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// gzipped is what a pprof profile starts with: it is gzipped protobuf.
func gzipped(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.HasPrefix(b, []byte{0x1f, 0x8b})
}

func TestStartCPU(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err := StartCPU(path)
	if err != nil {
		t.Fatal(err)
	}
	// A second profile at once is refused, and leaves the first running.
	if _, err := StartCPU(filepath.Join(t.TempDir(), "again.prof")); err == nil {
		t.Error("two CPU profiles at once")
	}
	stop()
	if !gzipped(t, path) {
		t.Error("not a profile")
	}
	stop, err = StartCPU("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := StartCPU(filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil {
		t.Error("a path that cannot be created: no error")
	}
}

func TestWriteAllocs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.prof")
	if err := WriteAllocs(path); err != nil {
		t.Fatal(err)
	}
	if !gzipped(t, path) {
		t.Error("not a profile")
	}
	if err := WriteAllocs(filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil {
		t.Error("a path that cannot be created: no error")
	}
}
