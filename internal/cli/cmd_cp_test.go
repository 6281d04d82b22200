package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/internal/await"
)

// sameTree checks that dir holds exactly want (relative slash paths).
func sameTree(t *testing.T, dir string, want map[string][]byte) {
	t.Helper()
	got := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s missing in %s", name, dir)
		} else if !bytes.Equal(g, data) {
			t.Errorf("%s: %d bytes that differ from the %d of the source", name, len(g), len(data))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected %s in %s", name, dir)
		}
	}
}

func sub(files map[string][]byte, prefix string) map[string][]byte {
	out := map[string][]byte{}
	for name, data := range files {
		if rest, ok := strings.CutPrefix(name, prefix); ok {
			out[rest] = data
		}
	}
	return out
}

func TestCp(t *testing.T) {
	src, files := catFixture(t)
	t.Run("a prefix into a new directory", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "copy")
		r := sluice(t, nil, "cp", filepath.Join(src, "d")+"/", dst+"/")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, "copied 4 objects") {
			t.Errorf("stdout: %q", r.stdout)
		}
		sameTree(t, dst, sub(files, "d/"))
	})
	t.Run("a directory named without its slash", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "copy")
		if r := sluice(t, nil, "cp", filepath.Join(src, "d"), dst); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		sameTree(t, dst, sub(files, "d/"))
	})
	t.Run("an object to a name, and into a directory", func(t *testing.T) {
		dst := t.TempDir()
		r := sluice(t, nil, "cp", filepath.Join(src, "big.bin"), filepath.Join(dst, "renamed.bin"))
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if !strings.HasPrefix(r.stdout, "copied 1 object, ") {
			t.Errorf("stdout: %q", r.stdout)
		}
		if r := sluice(t, nil, "cp", filepath.Join(src, "empty"), dst+"/"); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if r := sluice(t, nil, "cp", filepath.Join(src, "small.txt"), dst); r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		sameTree(t, dst, map[string][]byte{"renamed.bin": files["big.bin"], "empty": nil, "small.txt": files["small.txt"]})
	})
	t.Run("under faults, with stats", func(t *testing.T) {
		dst := t.TempDir()
		r := sluice(t, nil, "cp", "--stats", "--sim", "ttfb=1ms,stream=400MiB/s,slowdown=0.1,reset=0.2,seed=5", src+"/", dst+"/")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "retries") {
			t.Errorf("no statistics on stderr: %q", r.stderr)
		}
		sameTree(t, dst, files)
	})
}

// Through a real S3 endpoint (the embedded server): up, back down, and
// cat from it.
func TestCpThroughS3(t *testing.T) {
	src, files := catFixture(t)
	env := startServer(t, t.TempDir())
	if r := sluice(t, env, "cp", src+"/", "s3://bkt/up/"); r.code != 0 {
		t.Fatalf("cp up: exit %d: %s", r.code, r.stderr)
	}
	back := t.TempDir()
	if r := sluice(t, env, "cp", "s3://bkt/up/", back+"/"); r.code != 0 {
		t.Fatalf("cp down: exit %d: %s", r.code, r.stderr)
	}
	sameTree(t, back, files)
	r := sluice(t, env, "cat", "s3://bkt/up/big.bin", "s3://bkt/up/small.txt")
	if r.code != 0 || r.stdout != string(files["big.bin"])+string(files["small.txt"]) {
		t.Fatalf("cat from S3: exit %d, %d bytes: %s", r.code, len(r.stdout), r.stderr)
	}
}

// Ctrl-C in the middle of a copy: exit 130, and the object being written
// is not there, not even in part.
func TestCpInterrupted(t *testing.T) {
	src, _ := catFixture(t)
	dst := t.TempDir()
	cmd := exec.Command(sluiceBin, "cp", "-q", "--sim", "ttfb=5ms,stream=2MiB/s", filepath.Join(src, "big.bin"), dst+"/")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Into the copy: the temporary file is there; the modelled link keeps
	// it far from its end.
	await.Until(t, "the copy to begin writing", func() bool {
		entries, _ := os.ReadDir(dst)
		return len(entries) > 0
	})
	if code := interrupt(t, cmd, "cp"); code != exitInterrupt {
		t.Errorf("exit %d, want %d (stderr %q)", code, exitInterrupt, stderr.String())
	}
	if entries, _ := os.ReadDir(dst); len(entries) != 0 {
		t.Errorf("an interrupted copy left %v behind", entries)
	}
}
