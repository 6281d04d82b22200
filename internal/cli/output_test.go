package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/format"
)

// TestOutputsAgree: every way sluice writes a file (scan -o, run's write
// stage, get -o) takes every suffix of package format's table and
// --format, and writes the same bytes for the same batches: one output
// layer, not one per command. A failed write leaves nothing.
func TestOutputsAgree(t *testing.T) {
	data := t.TempDir()
	// Row groups below --batch-rows: one batch each, whichever reader.
	if r := sluice(t, nil, "gen", "taxi", "--rows", "6000", "--files", "3", "--row-group-rows", "1000", "--out", filepath.Join(data, "taxi"), "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	src := filepath.Join(data, "taxi")
	addr := startServe(t, data)
	out := t.TempDir()
	cols := "pickup_date,payment_type,trip_distance,fare_amount"
	// Each writes batches in dataset order, one at a time.
	paths := map[string]func(dest string, extra ...string) result{
		"scan -o": func(dest string, extra ...string) result {
			return sluice(t, nil, append([]string{"scan", src, "--columns", cols, "--order", "dataset", "--concurrency", "1", "-q", "-o", dest}, extra...)...)
		},
		"run write": func(dest string, extra ...string) result {
			w := "write " + dest
			if len(extra) > 0 {
				w = "write " + strings.Join(extra, " ") + " " + dest
			}
			return sluice(t, nil, "run", "--threads", "1", "scan "+src+" --columns "+cols+" --concurrency 1 | "+w)
		},
		"get -o": func(dest string, extra ...string) result {
			return sluice(t, nil, append([]string{"get", addr, "taxi/", "--columns", cols, "--parallel", "1", "--order", "dataset", "-o", dest}, extra...)...)
		},
	}
	for _, f := range format.Formats() {
		for _, suf := range f.Suffixes() {
			var want []byte
			wantFrom := ""
			for name, run := range paths {
				dest := filepath.Join(out, strings.ReplaceAll(name, " ", "_")+suf)
				if r := run(dest); r.code != 0 {
					t.Fatalf("%s %s: %+v", name, dest, r)
				}
				b, err := os.ReadFile(dest)
				if err != nil {
					t.Fatal(err)
				}
				if len(b) == 0 {
					t.Fatalf("%s %s: empty", name, dest)
				}
				if want == nil {
					want, wantFrom = b, name
				} else if !bytes.Equal(b, want) {
					t.Errorf("%s: %s wrote %d bytes, %s %d, not the same", suf, name, len(b), wantFrom, len(want))
				}
				// --format overrides the name.
				named := dest + ".out"
				if r := run(named, "--format", f.Name()); r.code != 0 {
					t.Fatalf("%s --format %s: %+v", name, f.Name(), r)
				}
				if b2, err := os.ReadFile(named); err != nil || !bytes.Equal(b2, b) {
					t.Errorf("%s --format %s: not the bytes of %s (%v)", name, f.Name(), suf, err)
				}
			}
		}
	}
	// An unknown suffix is refused up front by every path, the same way,
	// and leaves nothing.
	for name, run := range paths {
		dest := filepath.Join(out, "refused.txt")
		r := run(dest)
		if r.code != 2 || !strings.Contains(r.stderr, ".jsonl") {
			t.Errorf("%s -o %s: exit %d, stderr %q; want 2 and the list of suffixes", name, dest, r.code, r.stderr)
		}
		if _, err := os.Stat(dest); err == nil {
			t.Errorf("%s left %s", name, dest)
		}
	}
	// A failure half-way leaves nothing, not even a temporary file: a
	// dataset with a corrupt second file.
	bad := t.TempDir()
	for i, f := range []string{"part-00000.parquet", "part-00001.parquet"} {
		b, err := os.ReadFile(filepath.Join(src, "part-0000"+string(rune('0'+i))+".parquet"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			for j := 4; j < len(b)/2; j++ {
				b[j] ^= 0x5a
			}
		}
		if err := os.WriteFile(filepath.Join(bad, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dests := t.TempDir()
	for _, f := range format.Formats() {
		dest := filepath.Join(dests, "x"+f.Suffixes()[0])
		if r := sluice(t, nil, "scan", bad, "--order", "dataset", "--concurrency", "1", "-q", "-o", dest); r.code == 0 {
			t.Errorf("scan of a corrupt dataset -o %s succeeded", dest)
		}
		if r := sluice(t, nil, "run", "scan "+bad+" | write "+dest); r.code == 0 {
			t.Errorf("run of a corrupt dataset | write %s succeeded", dest)
		}
	}
	if ents, _ := os.ReadDir(dests); len(ents) != 0 {
		t.Errorf("failed writes left %s", ents[0].Name())
	}
}
