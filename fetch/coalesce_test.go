package fetch

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sluice-data/sluice/store"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
)

func TestCoalesce(t *testing.T) {
	r := func(off, n int64) store.Range { return store.Range{Off: off, Len: n} }
	tests := []struct {
		name   string
		ranges []store.Range
		hole   int64
		want   []span
	}{
		{"none", nil, 8 * KiB, []span{}},
		{"one", []store.Range{r(10, 5)}, 8 * KiB, []span{{10, 5}}},
		{"empty ranges dropped", []store.Range{r(10, 0), r(50, 0)}, 0, []span{}},
		{"adjacent merge with no hole", []store.Range{r(0, 10), r(10, 10)}, 0, []span{{0, 20}}},
		{"gap of exactly the hole merges", []store.Range{r(0, 10), r(18, 2)}, 8, []span{{0, 20}}},
		{"gap one over the hole stays apart", []store.Range{r(0, 10), r(19, 2)}, 8, []span{{0, 10}, {19, 2}}},
		{"unsorted input", []store.Range{r(100, 10), r(0, 10), r(50, 10)}, 40, []span{{0, 110}}},
		{"overlap and containment", []store.Range{r(0, 100), r(10, 5), r(90, 30)}, 0, []span{{0, 120}}},
		{"duplicates", []store.Range{r(5, 5), r(5, 5)}, 0, []span{{5, 5}}},
		{
			"parquet-like column chunks with one big skipped column",
			[]store.Range{r(4, 1000), r(1004, 2000), r(3004+5*MiB, 3000)},
			1 * MiB,
			[]span{{4, 3000}, {3004 + 5*MiB, 3000}},
		},
		{
			"holes below 1.3 MiB are read through",
			[]store.Range{r(0, MiB), r(2*MiB, MiB), r(4*MiB+MiB/2, MiB)},
			1300 * KiB,
			[]span{{0, 3 * MiB}, {4*MiB + MiB/2, MiB}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := coalesce(tt.ranges, tt.hole)
			if !slices.Equal(got, tt.want) {
				t.Errorf("coalesce(%v, %d) = %v, want %v", tt.ranges, tt.hole, got, tt.want)
			}
		})
	}
}

func TestBoundHole(t *testing.T) {
	r := func(off, n int64) store.Range { return store.Range{Off: off, Len: n} }
	tests := []struct {
		name   string
		ranges []store.Range
		hole   int64
		want   int64
	}{
		{"no gaps", []store.Range{r(0, 10), r(10, 10)}, 1000, 1000},
		{"gaps within 1/16", []store.Range{r(0, 800), r(810, 800), r(1650, 400)}, 1000, 1000},
		{"the largest gap over budget stays", []store.Range{r(0, 800), r(810, 800), r(1900, 400)}, 1000, 10},
		{"gaps above the hole do not count", []store.Range{r(0, 800), r(810, 800), r(9000, 400)}, 1000, 1000},
		{"equal gaps go together", []store.Range{r(0, 100), r(110, 100), r(220, 100)}, 1000, 0},
		{"none affordable", []store.Range{r(0, 10), r(100, 10)}, 1000, 0},
		{
			"two lineitem columns with small ones between",
			[]store.Range{r(16227320, 527059), r(17696097, 1585312)}, // l_discount, l_shipdate
			1415577,
			0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := boundHole(tt.ranges, tt.hole); got != tt.want {
				t.Errorf("boundHole(%v, %d) = %d, want %d", tt.ranges, tt.hole, got, tt.want)
			}
			var own, read int64
			for _, s := range coalesce(tt.ranges, 0) {
				own += s.n
			}
			for _, s := range coalesce(tt.ranges, boundHole(tt.ranges, tt.hole)) {
				read += s.n
			}
			if read-own > own/maxWasteShare {
				t.Errorf("reads %d bytes for %d", read, own)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   []span
		want []span
	}{
		{"small stays", []span{{0, 10 * MiB}}, []span{{0, 10 * MiB}}},
		{"24 MiB exactly stays", []span{{0, 24 * MiB}}, []span{{0, 24 * MiB}}},
		{"just over 24 MiB: two halves", []span{{0, 24*MiB + 2}}, []span{{0, 12*MiB + 1}, {12*MiB + 1, 12*MiB + 1}}},
		{"32 MiB: two of 16", []span{{100, 32 * MiB}}, []span{{100, 16 * MiB}, {100 + 16*MiB, 16 * MiB}}},
		{"33 MiB: three of 11", []span{{0, 33 * MiB}}, []span{{0, 11 * MiB}, {11 * MiB, 11 * MiB}, {22 * MiB, 11 * MiB}}},
		{"only the big one splits", []span{{0, MiB}, {2 * MiB, 48 * MiB}}, []span{{0, MiB}, {2 * MiB, 16 * MiB}, {18 * MiB, 16 * MiB}, {34 * MiB, 16 * MiB}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := split(tt.in, splitAbove, maxPart)
			if !slices.Equal(got, tt.want) {
				t.Errorf("split(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// Every split part of a span over 24 MiB is 8-16 MiB, and the parts tile
// the span exactly.
func TestSplitPartSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		s := span{rng.Int64N(1 << 40), 1 + rng.Int64N(4<<30)}
		parts := split([]span{s}, splitAbove, maxPart)
		pos := s.off
		for _, p := range parts {
			if p.off != pos {
				t.Fatalf("split(%v): part %v does not start at %d", s, p, pos)
			}
			if s.n > splitAbove && (p.n < 8*MiB || p.n > 16*MiB) {
				t.Fatalf("split(%v): part %v outside 8-16 MiB", s, p)
			}
			pos = p.end()
		}
		if pos != s.end() {
			t.Fatalf("split(%v): parts end at %d", s, pos)
		}
	}
}

func TestHole(t *testing.T) {
	tests := []struct {
		e    estimates
		want int64
	}{
		{estimates{ttfb50: 15e6, rate50: 90 * MiB}, 1415577}, // 15ms x 90 MiB/s ~ 1.35 MiB
		{estimates{ttfb50: 50e3, rate50: 90 * MiB}, minHole},
		{estimates{ttfb50: 1e9, rate50: 90 * MiB}, maxHole},
	}
	for _, tt := range tests {
		if got := tt.e.hole(minHole, maxHole); got != tt.want {
			t.Errorf("hole(%v x %.0f B/s) = %d, want %d", tt.e.ttfb50, tt.e.rate50, got, tt.want)
		}
	}
}
