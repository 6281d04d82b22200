package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The default tables fit a 100-column terminal with S3's figures at
// their widest (16 MiB objects in 8 MiB ranges, seconds-long tails, a
// thousand requests in flight); --wide has every figure the JSON has
// percentiles for.
func TestTableWidths(t *testing.T) {
	d := func(ms float64) Dist {
		return Dist{N: 1000, Min: ms / 10, P10: ms / 5, P50: ms, P90: 3 * ms, P99: 9 * ms, Max: 12 * ms}
	}
	sum := Summary{Kind: Get, ObjectSize: 16 << 20, RangeSize: 8 << 20, Concurrency: 1024, Objects: 4096,
		SteadyMiBps: 12345.6, WholeMiBps: 12001.2, SteadyObjps: 771.6,
		RequestMiBps: d(123.4), FirstByteMs: d(345), LastByteMs: d(1234), Errors: 12, Retries: 345}
	fits := func(name, s string, width int) {
		t.Helper()
		for line := range strings.Lines(s) {
			line = strings.TrimSuffix(line, "\n")
			if len(line) > width {
				t.Errorf("%s: a line of %d columns, want at most %d:\n%s", name, len(line), width, s)
			}
			if strings.HasSuffix(line, " ") {
				t.Errorf("%s: trailing blanks in %q", name, line)
			}
		}
	}

	var narrow, wide bytes.Buffer
	if err := WriteTable(&narrow, []Summary{sum, sum}, Narrow); err != nil {
		t.Fatal(err)
	}
	fits("narrow", narrow.String(), 100)
	for _, want := range []string{"steady", "whole", "ms p50/p99", "345/3105", "1234/11106", " 12", "345"} {
		if !strings.Contains(narrow.String(), want) {
			t.Errorf("narrow table lacks %q:\n%s", want, narrow.String())
		}
	}
	if err := WriteTable(&wide, []Summary{sum}, Wide); err != nil {
		t.Fatal(err)
	}
	fits("wide", wide.String(), 140)
	for _, want := range []string{"obj/s", "771.6", "24.7/123.4/370.2", "345/1035/3105/4140", "1234/3702/11106/14808"} {
		if !strings.Contains(wide.String(), want) {
			t.Errorf("wide table lacks %q:\n%s", want, wide.String())
		}
	}

	run := WorkersRun{Round: 2, Workers: 64, Put: sum, Get: sum, StartSkew: 1234 * time.Millisecond,
		PerWorkerPut: []float64{39.1, 40, 40.2}, PerWorkerGet: []float64{39.1, 40, 40.2}}
	var workers bytes.Buffer
	if err := WriteWorkersReport(&workers, WorkersResult{Runs: []WorkersRun{run}}); err != nil {
		t.Fatal(err)
	}
	fits("workers", workers.String(), 100)
	t.Logf("\n%s\n%s\n%s", narrow.String(), wide.String(), workers.String())
}
