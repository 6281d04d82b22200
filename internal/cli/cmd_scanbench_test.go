package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestScanBenchBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"--only", "nope"}, exitUsage, "--only"},
		{[]string{"--runs", "0"}, exitUsage, "--runs"},
		{[]string{"--raw-concurrency", "0,4"}, exitUsage, "--raw-concurrency"},
		{[]string{"--size", "lots"}, exitUsage, "--size"},
		{[]string{"--faults", "slowdown=2"}, exitUsage, "--faults"},
		{[]string{"--memory", "1KiB"}, exitUsage, "--memory"},
		{[]string{"a", "b"}, exitUsage, "at most one URL"},
	} {
		r := sluice(t, nil, append([]string{"bench-scan", "-q", "--cache", dir}, c.args...)...)
		assertCleanFailure(t, r, c.code, c.mention)
	}
	r := sluice(t, nil, "bench-scan", "-q", "file://"+dir+"/none/")
	if r.code == 0 {
		t.Errorf("a dataset of no files: exit 0")
	}
}

func TestScanBenchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	args := []string{"bench-scan", "-q", "--cache", dir, "--rows", "40000", "--files", "2", "--runs", "2",
		"--raw-concurrency", "1,4", "--file-concurrency", "1,2", "--sim", "ttfb=1ms,stream=400MiB/s",
		"--projection", "l_orderkey,l_comment", "--faults", "slowdown=0.05,reset=0.05"}
	r := sluice(t, nil, append(args, "--json")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Sim    string `json:"sim"`
		Faults string `json:"faults"`
		Report struct {
			Dataset struct {
				Files           int   `json:"files"`
				Rows            int64 `json:"rows"`
				ProjectionBytes int64 `json:"projection_bytes"`
			} `json:"dataset"`
			Runs  []json.RawMessage `json:"runs"`
			Equal bool              `json:"faulty_checksums_equal"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v in %s", err, r.stdout)
	}
	rep := doc.Report
	if doc.Sim != "ttfb=1ms,stream=400MiB/s" || !strings.Contains(doc.Faults, "slowdown=0.05") {
		t.Errorf("sim %q, faults %q", doc.Sim, doc.Faults)
	}
	if rep.Dataset.Files != 2 || rep.Dataset.Rows != 40000 || rep.Dataset.ProjectionBytes <= 0 || len(rep.Runs) != 2 || !rep.Equal {
		t.Errorf("report %+v", rep)
	}
	var raw struct {
		Report struct {
			MedianRatios map[string]float64 `json:"median_ratios"`
		} `json:"report"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	ratios := raw.Report.MedianRatios
	for _, k := range []string{"scan_raw", "scan_naive", "scan_whole", "scan_decode", "decode_arrowgo", "faulty_time_ratio"} {
		if ratios[k] <= 0 {
			t.Errorf("ratio %s = %v", k, ratios[k])
		}
	}

	// The second run reuses the generated dataset, and the table names
	// every figure; --rss alone runs only the child scan.
	r = sluice(t, nil, append(args[:len(args)-2], "--runs", "1")...) // no faults
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"raw GET (best:", "scan, all columns", "naive arrow-go", "whole-object GET", "decode only", "arrow-go record reader", "decode only / arrow-go",
		"scan / raw GET", "scan / naive", "scan / whole-then-decode", "projection:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	r = sluice(t, nil, "bench-scan", "-q", "--cache", dir, "--rows", "40000", "--files", "2", "--rss", "--memory", "4MiB")
	if r.code != 0 || !strings.Contains(r.stdout, "peak RSS of sluice scan --memory 4MiB") || strings.Contains(r.stdout, "scan, all columns") {
		t.Errorf("--rss: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
