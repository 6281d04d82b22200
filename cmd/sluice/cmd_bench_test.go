package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchBadInput(t *testing.T) {
	dir := t.TempDir()
	url := "file://" + dir + "/"
	for _, c := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"--size", "0"}, exitUsage, "object size must be positive"},
		{[]string{"--size", "-1MiB"}, exitUsage, "must not be negative"},
		{[]string{"--size", "16M"}, exitUsage, "bad size"},
		{[]string{"--concurrency", "0"}, exitUsage, "--concurrency"},
		{[]string{"--range-size", "0"}, exitUsage, "--range-size"},
		{[]string{"--objects", "-2"}, exitUsage, "objects must not be negative"},
		{[]string{"--read-only", "--write-only"}, exitUsage, "exclude each other"},
		{[]string{"--out", filepath.Join(dir, "r.txt")}, exitUsage, ".jsonl"},
		{[]string{"--read-only"}, exitNotFound, "no objects to read"},
	} {
		r := sluice(t, nil, append([]string{"bench", url, "-q"}, c.args...)...)
		assertCleanFailure(t, r, c.code, c.mention)
	}
	// An unwritable place: the first put fails and the run stops there.
	r := sluice(t, nil, "bench", "file:///proc/sluice-bench-test/", "-q", "-n", "2", "--size", "1KiB")
	if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("unwritable URL: exit %d, stderr %q", r.code, r.stderr)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("bad input left %d entries behind", len(left))
	}
}

func TestBenchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "theirs"), []byte("not ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, plot := filepath.Join(dir, "reqs.csv"), filepath.Join(dir, "bench.png")
	r := sluice(t, nil, "bench", "file://"+data+"/", "-q", "--json", "-n", "6", "--size", "256KiB,1MiB", "-c", "1,3",
		"--range-size", "100KiB", "--out", out, "--plot", plot, "--sim", "ttfb=1ms,stream=200MiB/s")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		URL    string `json:"url"`
		Sim    string `json:"sim"`
		Phases []struct {
			Kind        string  `json:"kind"`
			Objects     int     `json:"objects"`
			Concurrency int     `json:"concurrency"`
			RangeSize   int64   `json:"range_size"`
			SteadyMiBps float64 `json:"steady_mib_s"`
			WholeMiBps  float64 `json:"whole_mib_s"`
			FirstByteMs struct {
				P50 float64 `json:"p50"`
			} `json:"first_byte_ms"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("--json output: %v\n%s", err, r.stdout)
	}
	if len(doc.Phases) != 8 || !strings.Contains(doc.URL, "/sluice-bench-") || doc.Sim != "ttfb=1ms,stream=200MiB/s" {
		t.Fatalf("json: %+v", doc)
	}
	for _, p := range doc.Phases {
		if p.Objects != 6 || p.SteadyMiBps <= 0 || p.WholeMiBps <= 0 || p.FirstByteMs.P50 < 1 {
			t.Errorf("phase %+v", p)
		}
		if (p.Kind == "get") != (p.RangeSize == 100<<10) {
			t.Errorf("phase %s has range size %d", p.Kind, p.RangeSize)
		}
	}
	left, _ := os.ReadDir(data)
	if len(left) != 1 || left[0].Name() != "theirs" {
		t.Errorf("after the run %s holds %v; want only what was there", data, left)
	}
	csv, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(csv), "kind,cell,concurrency,worker,") {
		t.Fatalf("--out: %v %.80q", err, csv)
	}
	f, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("--plot: %v", err)
	}
}

func TestBenchKeepThenReadOnly(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, nil, "bench", dir, "-q", "--write-only", "--keep", "-n", "3", "--size", "512KiB", "-c", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "kept the objects under file://") {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	kept := strings.TrimSpace(r.stdout[strings.LastIndex(r.stdout, "under ")+len("under "):])
	r = sluice(t, nil, "bench", kept, "--read-only", "-c", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "get: 3 objects of 512KiB, concurrency 2") {
		t.Fatalf("read-only: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// Not a terminal: each phase ends with a plain line on stderr.
	if !strings.Contains(r.stderr, "MiB/s steady") {
		t.Errorf("no plain progress line: %q", r.stderr)
	}
	if objs, _ := filepath.Glob(filepath.Join(dir, "sluice-bench-*", "obj-*")); len(objs) != 3 {
		t.Errorf("read-only changed the kept objects: %v", objs)
	}
}
