package cli

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluice-data/sluice/internal/emulators"
)

// TestCpAcrossStores: a directory of a 20 MiB object (parts of a
// multipart upload, staged blocks, a resumable upload in chunks), a small
// one and an empty one goes file -> s3 (MinIO) -> gs (fake-gcs-server) ->
// az (Azurite) -> file with sluice cp, and comes back byte-identical.
func TestCpAcrossStores(t *testing.T) {
	s3env, s3base, _ := minioBase(t)
	cs, ctr := emulators.Azure(t, "cli")
	env := append(append([]string(nil), s3env...), "AZURE_STORAGE_CONNECTION_STRING="+cs, "STORAGE_EMULATOR_HOST="+emulators.GCS(t, "bkt"))
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	files := map[string][]byte{"big.bin": make([]byte, 20<<20), "sub/small.txt": []byte("a small object\n"), "empty": nil}
	rand.Read(files["big.bin"])
	for name, b := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	back := filepath.Join(dir, "back")
	hops := []string{src + "/", s3base + "hop/", "gs://bkt/hop/", "az://" + ctr + "/hop/", back + "/"}
	for i := 1; i < len(hops); i++ {
		if r := sluice(t, env, "cp", hops[i-1], hops[i], "-q"); r.code != 0 {
			t.Fatalf("cp %s %s: %+v", hops[i-1], hops[i], r)
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(back, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes back (%v), %d sent", name, len(got), err, len(want))
		}
	}
}
