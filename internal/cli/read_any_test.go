package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadAnything: what sluice writes in each format, and CSV and JSON
// lines written by another program, read back by show and by scan (and
// run's scan), with its suffix and without one: the format is told by
// content. Every form gives to-csv's rows of the original.
func TestReadAnything(t *testing.T) {
	dir := t.TempDir()
	taxi := filepath.Join(dir, "taxi")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "20000", "--files", "2", "--row-group-rows", "4000", "--out", taxi, "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	wantOut, stderr, code := bash(t, "sluice scan "+taxi+" -o - | sluice to-csv")
	if code != 0 {
		t.Fatalf("to-csv: %s", stderr)
	}
	want := string(wantOut)
	files := map[string]string{} // name -> path
	for _, suffix := range []string{"parquet", "arrow", "arrows", "csv", "jsonl"} {
		p := filepath.Join(dir, "q."+suffix)
		if r := sluice(t, nil, "scan", taxi, "-o", p); r.code != 0 {
			t.Fatalf("scan -o %s: %+v", p, r)
		}
		files[suffix] = p
	}
	// Written by another program: the shell.
	other := filepath.Join(dir, "other.csv")
	if _, stderr, code := bash(t, "printf 'city,n,when\\nKöln,3,2024-02-29\\n\"Paris, FR\",,2024-03-01\\n' > "+other); code != 0 {
		t.Fatal(stderr)
	}
	otherJSON := filepath.Join(dir, "other.jsonl")
	if _, stderr, code := bash(t, `printf '{"city":"Köln","n":3,"x":1.5}\n{"n":null,"city":"Paris, FR","x":2}\n{"city":"Oslo"}\n' > `+otherJSON); code != 0 {
		t.Fatal(stderr)
	}
	for name, p := range files {
		bare := filepath.Join(dir, "bare-"+name) // no suffix
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bare, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{p, bare} {
			for form, script := range map[string]string{
				"scan":      "sluice scan " + path + " -o - | sluice to-csv",
				"run":       "sluice run " + shellQuote("scan "+path+" | to-csv"),
				"show (-o)": "sluice show " + path + " --rows 0",
			} {
				out, stderr, code := bash(t, script)
				if code != 0 {
					t.Fatalf("%s %s: exit %d: %s", form, path, code, stderr)
				}
				if form == "show (-o)" {
					// show prints a table: its rows are to-csv's, cell by cell.
					if got, wantRows := strings.Count(string(out), "\n"), strings.Count(want, "\n")-1+4; got != wantRows {
						t.Errorf("show %s: %d lines, want %d", path, got, wantRows)
					}
					if !strings.Contains(string(out), "(20000 rows)") {
						t.Errorf("show %s: %.300s", path, out)
					}
					continue
				}
				if string(out) != want {
					t.Errorf("%s %s: %d bytes of CSV, want %d: %.200q", form, path, len(out), len(want), out)
				}
			}
		}
		if r := sluice(t, nil, "scan", bare); r.code != 0 || r.stdout != "20000 rows\n" {
			t.Errorf("scan %s: %+v", bare, r)
		}
	}
	for _, c := range []struct{ path, want string }{
		{other, "city,n,when\nKöln,3,2024-02-29\n\"Paris, FR\",,2024-03-01\n"},
		{otherJSON, "city,n,x\nKöln,3,1.5\n\"Paris, FR\",,2\nOslo,,\n"},
	} {
		for _, path := range []string{c.path, strings.TrimSuffix(c.path, filepath.Ext(c.path))} {
			if path != c.path {
				b, _ := os.ReadFile(c.path)
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out, stderr, code := bash(t, "sluice scan "+path+" -o - | sluice to-csv")
			if code != 0 || string(out) != c.want {
				t.Errorf("scan %s: exit %d, %q, want %q: %s", path, code, out, c.want, stderr)
			}
			if r := sluice(t, nil, "show", path); r.code != 0 || !strings.Contains(r.stdout, "Paris, FR") {
				t.Errorf("show %s: %+v", path, r)
			}
		}
	}
	// A directory of CSV files reads as one dataset, --columns and
	// --filter apply, and bad input is one line.
	d := filepath.Join(dir, "csvs")
	os.Mkdir(d, 0o755)
	for _, n := range []string{"a.csv", "b.csv"} {
		b, _ := os.ReadFile(files["csv"])
		os.WriteFile(filepath.Join(d, n), b, 0o644)
	}
	r := sluice(t, nil, "run", "scan "+d+" --columns payment_type --filter 'fare_amount > 50' | count-by payment_type | to-csv")
	single := sluice(t, nil, "run", "scan "+taxi+" --columns payment_type --filter 'fare_amount > 50' | count-by payment_type | to-csv")
	if r.code != 0 || single.code != 0 || r.stdout == single.stdout || strings.Count(r.stdout, "\n") != strings.Count(single.stdout, "\n") {
		t.Errorf("two copies: %+v\none: %+v", r, single)
	}
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte{0, 1, 2, 3, 0xff, 0xfe, 9, 9}, 0o644)
	assertCleanFailure(t, sluice(t, nil, "show", junk), exitError, "not a format sluice reads")
	assertCleanFailure(t, sluice(t, nil, "scan", filepath.Join(dir, "nope.csv")), exitNotFound, "nothing to read")
	assertCleanFailure(t, sluice(t, nil, "run", "scan "+taxi+" | show "+files["csv"]), exitUsage, "show takes no file inside a pipeline")
}
