package exec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// A CSV object that cannot be opened is the run's error, not an empty
// result: show and to-csv must not print a valid-looking empty table.
func TestFromCSVOpenErrorIsTheRunsError(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv")
	if err := os.WriteFile(good, []byte("a,b\n1,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, urls := range [][]string{
		{filepath.Join(dir, "nope.csv")},
		{filepath.Join(dir, "nope.csv"), good},
	} {
		mem := checkedMem(t)
		var out bytes.Buffer
		err := Run(context.Background(), Pipeline{Source: FromCSV(urls, nil, CSVOptions{}), Stages: []Stage{Show(&out, 10)}}, Options{Open: testOpen, Mem: mem})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%v: err = %v, want one wrapping store.ErrNotFound", urls, err)
		}
		if out.Len() != 0 {
			t.Errorf("%v: show printed %q for a failed run", urls, out.String())
		}
	}
}

// Parquet or Arrow bytes given to from-csv are refused by name instead of
// read as a one-column table of garbage.
func TestFromCSVRefusesColumnarFiles(t *testing.T) {
	for _, head := range []string{"PAR1\x15\x04", "ARROW1\x00\x00", "\xff\xff\xff\xff\x10\x00"} {
		mem := checkedMem(t)
		var out bytes.Buffer
		err := Run(context.Background(), Pipeline{Source: FromCSV(nil, strings.NewReader(head+"rest,of\n1,2\n"), CSVOptions{}), Stages: []Stage{Show(&out, 10)}}, Options{Open: testOpen, Mem: mem})
		if err == nil || !strings.Contains(err.Error(), "not CSV") {
			t.Errorf("%q: err = %v, want a 'not CSV' error", head, err)
		}
	}
}

// An empty field is null in string columns too, as from-csv's help says
// and as DuckDB reads it.
func TestFromCSVEmptyStringIsNull(t *testing.T) {
	mem := checkedMem(t)
	var out bytes.Buffer
	f, err := Filter("s is null")
	if err != nil {
		t.Fatal(err)
	}
	src := FromCSV(nil, strings.NewReader("s,n\n,1\nx,2\n"), CSVOptions{})
	if err := Run(context.Background(), Pipeline{Source: src, Stages: []Stage{f, ToCSV(&out)}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	if want := "s,n\n,1\n"; out.String() != want {
		t.Fatalf("rows with a null s: %q, want %q", out.String(), want)
	}
}
