package kubernetes

import (
	"strconv"
	"strings"
	"testing"
)

func TestIndexes(t *testing.T) {
	for _, c := range []struct {
		list         string
		count, first int
	}{
		{"", 0, -1},
		{"0", 1, 0},
		{"0-3,5,7-9", 8, 0},
		{"2,4,6", 3, 2},
		{"3-5", 3, 3},
	} {
		if n := countIndexes(c.list); n != c.count {
			t.Errorf("countIndexes(%q) = %d, want %d", c.list, n, c.count)
		}
		if i := firstIndex(c.list); i != c.first {
			t.Errorf("firstIndex(%q) = %d, want %d", c.list, i, c.first)
		}
	}
}

// FuzzJobIndexes: any completedIndexes or failedIndexes string the API
// server sends is counted without a panic, and a list of single indexes
// reads back as those.
func FuzzJobIndexes(f *testing.F) {
	for _, s := range []string{"0-3,5", "", "7", "1-0", "-", ",,", "3-x,4", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if n := countIndexes(s); n < 0 {
			t.Fatalf("countIndexes(%q) = %d", s, n)
		}
		firstIndex(s)
		var idx []string
		for _, b := range []byte(s) {
			idx = append(idx, strconv.Itoa(int(b)))
		}
		list := strings.Join(idx, ",")
		if countIndexes(list) != len(idx) || (len(idx) > 0 && strconv.Itoa(firstIndex(list)) != idx[0]) {
			t.Fatalf("%q reads back as %d indexes from %d", list, countIndexes(list), firstIndex(list))
		}
	})
}
