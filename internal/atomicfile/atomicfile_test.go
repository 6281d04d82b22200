package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(name, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A failed write leaves the old file as it was, and no temporary one.
	boom := errors.New("boom")
	err := Write(name, func(w io.Writer) error {
		_, _ = io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if b, _ := os.ReadFile(name); string(b) != "old" {
		t.Fatalf("after a failed write: %q", b)
	}
	if err := Write(name, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(name)
	fi, _ := os.Stat(name)
	if string(b) != "new" || fi.Mode().Perm() != 0o644 {
		t.Fatalf("after a write: %q, mode %v", b, fi.Mode())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("left in the directory: %v", entries)
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir"), func(io.Writer) error { return nil }); err == nil {
		t.Fatal("a write into a missing directory succeeded")
	}
}
