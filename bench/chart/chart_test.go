package chart

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/bench"
)

// records are n puts then n gets of 1 MiB in each of cells, spread over
// two processes, one get failed.
func records(cells, n int) []bench.Record {
	var recs []bench.Record
	for c := range cells {
		for i := range 2 * n {
			kind := bench.Put
			if i >= n {
				kind = bench.Get
			}
			start := time.Duration(i) * 10 * time.Millisecond
			r := bench.Record{Kind: kind, Cell: c, Concurrency: 2, Object: i % n, Len: 1 << 20, Start: start,
				FirstByte: start + 2*time.Millisecond, LastByte: start + time.Duration(5+i)*time.Millisecond,
				Bytes: 1 << 20, Process: i % 2, Processes: 2}
			if i == 2*n-1 {
				r.Err, r.Bytes = "injected", 0
			}
			recs = append(recs, r)
		}
	}
	return recs
}

func TestRequests(t *testing.T) {
	var b bytes.Buffer
	if err := (Charts{}).Requests(&b, records(1, 20)); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	// Three panels, one above the other.
	if r := img.Bounds(); r.Dy() <= r.Dx() {
		t.Errorf("requests: %v, want taller than wide", r)
	}
}

// A timeline has a panel a cell: two cells draw a taller image than one;
// no records is an error, not an empty image.
func TestTimeline(t *testing.T) {
	height := func(recs []bench.Record) int {
		t.Helper()
		var b bytes.Buffer
		if err := (Charts{}).Timeline(&b, recs); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("not a PNG: %v", err)
		}
		return img.Bounds().Dy()
	}
	if one, two := height(records(1, 8)), height(records(2, 8)); two <= one {
		t.Errorf("heights: one cell %d, two %d", one, two)
	}
	if err := Timeline(&bytes.Buffer{}, nil); err == nil || !strings.Contains(err.Error(), "no requests") {
		t.Errorf("no records: %v", err)
	}
}
