package fanout

import (
	"slices"
	"strings"
	"testing"
)

func TestIndexList(t *testing.T) {
	for _, c := range []struct {
		idx  []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3, 5, 7, 8, 9}, "0-3,5,7-9"},
		{[]int{2, 4, 6}, "2,4,6"},
	} {
		got := indexList(c.idx)
		if got != c.want {
			t.Errorf("indexList(%v) = %q, want %q", c.idx, got, c.want)
		}
		if n := countIndexes(got); n != len(c.idx) {
			t.Errorf("countIndexes(%q) = %d, want %d", got, n, len(c.idx))
		}
		if len(c.idx) > 0 && firstIndex(got) != c.idx[0] {
			t.Errorf("firstIndex(%q) = %d, want %d", got, firstIndex(got), c.idx[0])
		}
	}
	if firstIndex("") != -1 || countIndexes("") != 0 {
		t.Error("an empty list has indexes")
	}
}

func TestLastLines(t *testing.T) {
	log := "starting\n\nsluice: read a\nsluice: scan x: row group 0: parquet: bad page\n\n"
	if got, want := lastLines(log, 2), "read a; scan x: row group 0: parquet: bad page"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := lastLines("", 3); got != "" {
		t.Errorf("empty log: %q", got)
	}
}

// FuzzJobIndexes: any completedIndexes or failedIndexes string the API
// server sends is counted without a panic, and a list indexList writes
// reads back as its indexes.
func FuzzJobIndexes(f *testing.F) {
	for _, s := range []string{"0-3,5", "", "7", "1-0", "-", ",,", "3-x,4", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := countIndexes(s); n < 0 {
			t.Fatalf("countIndexes(%q) = %d", s, n)
		}
		firstIndex(s)
		// Indexes from the bytes, ascending and distinct, round-trip.
		var idx []int
		for _, b := range []byte(s) {
			idx = append(idx, int(b))
		}
		slices.Sort(idx)
		idx = slices.Compact(idx)
		list := indexList(idx)
		if countIndexes(list) != len(idx) || (len(idx) > 0 && firstIndex(list) != idx[0]) || strings.Contains(list, " ") {
			t.Fatalf("indexList(%v) = %q reads back as %d indexes from %d", idx, list, countIndexes(list), firstIndex(list))
		}
	})
}

// FuzzLastLines: whatever a worker logged, its last lines come out as
// one line.
func FuzzLastLines(f *testing.F) {
	for _, s := range []string{"", "\n\n", "sluice: a\nsluice: b\n", "x\r\ny", "\x00\n\xff"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, log string, n int) {
		n = n%8 + 1
		if n < 1 {
			n += 8
		}
		got := lastLines(log, n)
		if strings.Contains(got, "\n") || strings.Count(got, "; ") > strings.Count(log, "; ")+n-1 {
			t.Fatalf("lastLines(%q, %d) = %q", log, n, got)
		}
	})
}
