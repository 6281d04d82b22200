package spillfile

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A spill file has no name from its creation, reads back what was
// written, and a process killed while holding one leaves nothing.
func TestCreate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("an open file keeps its name on Windows")
	}
	dir := t.TempDir()
	f, err := Create(dir, "sluice-test-*")
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("named in %s: %v", dir, left)
	}
	if _, err := f.WriteString("spilled"); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 7))
	if err != nil || string(b) != "spilled" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if err := Remove(f); err != nil {
		t.Fatal(err)
	}

	// A child that creates one and is killed leaves nothing in dir.
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "SPILLFILE_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("child: %q, %v", buf, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 0 {
		t.Fatalf("a killed process left %q", left)
	}
}

// TestMain is also the child of TestCreate: it holds a written spill
// file until it is killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SPILLFILE_CHILD"); dir != "" {
		f, err := Create(dir, "sluice-child-*")
		if err != nil {
			os.Exit(1)
		}
		f.WriteString(strings.Repeat("x", 1<<20))
		os.Stdout.WriteString("ready\n")
		select {}
	}
	os.Exit(m.Run())
}
