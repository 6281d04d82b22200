package jobkey

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestLoad: the first Load makes a key only the user can read, later
// ones (and concurrent first ones) read that same key, and a damaged
// file is refused with the way out.
func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice", "job-key")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := Load(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	for _, k := range keys {
		if len(k) != 32 || !bytes.Equal(k, keys[0]) {
			t.Fatalf("keys differ or are not 32 bytes: %x, %x", k, keys[0])
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".job-key-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	again, err := Load(path)
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Fatalf("second Load: %x, %v", again, err)
	}
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("damaged key: %v", err)
	}
}
