package scan

import (
	"context"
	"strings"
	"testing"
)

// TestFilterPrunes: row groups are skipped by what any filter's
// top-level conjuncts say of one column (or, in, between), and the rows
// of those read are the filter's; Prune skips the same row groups but
// keeps every row of those it reads.
func TestFilterPrunes(t *testing.T) {
	st := memStore(t.Name())
	put(t, st, "d/a.parquet", 0, 1000, 100, nil) // a = 0..999 sorted, 10 row groups
	// s as put writes it: null every 5th row, else i%7 x's.
	sOf := func(i int) (string, bool) { return strings.Repeat("x", i%7), i%5 != 0 }
	for _, c := range []struct {
		filter, prune string
		keep          func(i int) bool
		pruned        int
	}{
		{"a < 100 or a >= 900", "", func(i int) bool { return i < 100 || i >= 900 }, 8},
		{"a in (5, 950)", "", func(i int) bool { return i == 5 || i == 950 }, 8},
		{"a between 250 and 349", "", func(i int) bool { return i >= 250 && i <= 349 }, 8},
		{"a not between 100 and 899", "", func(i int) bool { return i < 100 || i > 899 }, 0},
		{"not a < 900", "", func(i int) bool { return i >= 900 }, 0},
		{"a >= 900 and (s = 'xx' or s is null)", "", func(i int) bool { v, ok := sOf(i); return i >= 900 && (!ok || v == "xx") }, 9},
		{"s like 'xxx%' and a < 50", "", func(i int) bool { v, ok := sOf(i); return ok && len(v) >= 3 && i < 50 }, 9},
		{"", "a >= 900", func(i int) bool { return i >= 900 }, 9},
		{"", "nope > 1", func(int) bool { return true }, 0},
		{"a < 500", "a >= 400", func(i int) bool { return i >= 400 && i < 500 }, 9},
	} {
		ds, err := Open(context.Background(), st, "d/", Options{Filter: c.filter, Prune: c.prune, Mem: checked(t), BatchRows: 64})
		if err != nil {
			t.Fatalf("%q/%q: %v", c.filter, c.prune, err)
		}
		var want int64
		for i := range 1000 {
			if c.keep(i) {
				want++
			}
		}
		s := ds.Scan(context.Background())
		_, pos := collect(t, s)
		stats := s.Stats()
		s.Close()
		if stats.Rows != want || stats.RowGroupsPruned != c.pruned {
			t.Errorf("filter %q, prune %q: %d rows, %d row groups pruned; want %d and %d (%d batches)",
				c.filter, c.prune, stats.Rows, stats.RowGroupsPruned, want, c.pruned, len(pos))
		}
	}
}
