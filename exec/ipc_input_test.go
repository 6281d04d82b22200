package exec

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An Arrow IPC file given as a stage's stdin (sluice show < q.arrow) is
// read in its footer's order; input that is not Arrow at all is named.
func TestReadIPCTakesAnArrowFileOnStdin(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, kvSchema, []any{"a", 1, 1.5}, []any{"b", nil, -2.25})
	defer b.Release()
	path := filepath.Join(t.TempDir(), "q.arrow")
	if err := Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, b, b), Stages: []Stage{Write(path)}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if err := Run(context.Background(), Pipeline{Source: ReadIPC(f), Stages: []Stage{ToCSV(&out)}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	if want := "k,n,x\na,1,1.5\nb,,-2.25\na,1,1.5\nb,,-2.25\n"; out.String() != want {
		t.Fatalf("read back %q, want %q", out.String(), want)
	}
}

func TestReadIPCNamesWhatItGot(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"hello\n", "CSV is read by sluice from-csv"},
		{"PAR1\x15\x04\x15\x00", "a Parquet file"},
		{"ARROW1\x00\x00\xff\xff\xff\xff", "an Arrow IPC file"},
	} {
		mem := checkedMem(t)
		var out bytes.Buffer
		err := Run(context.Background(), Pipeline{Source: ReadIPC(strings.NewReader(c.in)), Stages: []Stage{Show(&out, 10)}}, Options{Open: testOpen, Mem: mem})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want one saying %q", c.in, err, c.want)
		}
	}
}
