package fetch

import (
	"slices"

	"github.com/sluice-data/sluice/store"
)

// span is a contiguous piece of one object: a coalesced group of ranges,
// or one part of a group that was split.
type span struct{ off, n int64 }

func (s span) end() int64 { return s.off + s.n }

// coalesce sorts ranges and merges those that overlap or whose gap is at
// most hole: reading the gap is cheaper than paying another first byte.
// Empty ranges are dropped. Ranges must be absolute (Off, Len >= 0).
func coalesce(rs []store.Range, hole int64) []span {
	out := make([]span, 0, len(rs))
	for _, r := range rs {
		if r.Len > 0 {
			out = append(out, span{r.Off, r.Len})
		}
	}
	slices.SortFunc(out, func(a, b span) int {
		switch {
		case a.off < b.off:
			return -1
		case a.off > b.off:
			return 1
		}
		return 0
	})
	merged := out[:0]
	for _, s := range out {
		if k := len(merged) - 1; k >= 0 && s.off-merged[k].end() <= hole {
			merged[k].n = max(merged[k].end(), s.end()) - merged[k].off
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// maxWasteShare bounds the holes a unit reads through: at most 1/16 of its
// ranges' own bytes.
const maxWasteShare = 16

// boundHole lowers hole, if need be, so that the gaps coalesce reads
// through add at most 1/maxWasteShare of the ranges' own bytes, keeping
// the smallest gaps. The hole rule weighs one request's first byte against
// the bytes of a gap, as if requests ran one after another; with many in
// flight a first byte is mostly hidden while every byte read through
// still takes link bandwidth and memory. A projection of a few columns
// with small columns between them would otherwise read those too.
func boundHole(rs []store.Range, hole int64) int64 {
	spans := coalesce(rs, 0)
	var own int64
	var gaps []int64
	for i, s := range spans {
		own += s.n
		if i > 0 {
			if g := s.off - spans[i-1].end(); g <= hole {
				gaps = append(gaps, g)
			}
		}
	}
	slices.Sort(gaps)
	budget := own / maxWasteShare
	var sum, bound int64
	for i, g := range gaps {
		sum += g
		if i+1 < len(gaps) && gaps[i+1] == g {
			continue // gaps of one size are read through together or not at all
		}
		if sum > budget {
			return bound
		}
		bound = g
	}
	return hole
}

// split cuts every span longer than above into the fewest parts of at
// most maxPart bytes, of equal size (give or take a byte), so the parts of
// one span download in parallel. With above = 24 MiB and maxPart = 16 MiB
// every part of a split span is between 8 and 16 MiB.
func split(spans []span, above, maxPart int64) []span {
	out := make([]span, 0, len(spans))
	for _, s := range spans {
		if s.n <= above {
			out = append(out, s)
			continue
		}
		k := (s.n + maxPart - 1) / maxPart
		for i := int64(0); i < k; i++ {
			a, b := s.off+s.n*i/k, s.off+s.n*(i+1)/k
			out = append(out, span{a, b - a})
		}
	}
	return out
}
