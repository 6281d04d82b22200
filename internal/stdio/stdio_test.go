package stdio

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestNotTerminals(t *testing.T) {
	_, w, f := pipeAndFile(t)
	for name, x := range map[string]any{"a pipe": w, "a file": f, "a buffer": &bytes.Buffer{}} {
		if IsTerminal(x) || TermWidth(x.(interface{ Write([]byte) (int, error) })) != 0 {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
}

// A pipe or a redirected file is input a program provides; a device
// (/dev/null) or a buffer is neither.
func TestIsPipeOrFile(t *testing.T) {
	r, _, f := pipeAndFile(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for name, c := range map[string]struct {
		r    interface{ Read([]byte) (int, error) }
		want bool
	}{
		"a pipe": {r, true}, "a file": {f, true}, os.DevNull: {null, false}, "a buffer": {&bytes.Buffer{}, false},
	} {
		if got := IsPipeOrFile(c.r); got != c.want {
			t.Errorf("%s: IsPipeOrFile = %v, want %v", name, got, c.want)
		}
	}
}

// pipeAndFile are both ends of a pipe and a file, closed when the test
// ends.
func pipeAndFile(t *testing.T) (r, w, f *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	f, err = os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return r, w, f
}
