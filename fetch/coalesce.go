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
