package transfer

import (
	"slices"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// Consecutive sources in one store become one; a store met again later
// starts a group of its own, so the order of the objects holds. The
// sources' lists are left as they were.
func TestByStore(t *testing.T) {
	a, b := new(store.Store), new(store.Store)
	src := func(st *store.Store, keys ...string) Source {
		s := Source{Store: st}
		for _, k := range keys {
			s.List = append(s.List, store.ObjectInfo{Key: k})
		}
		return s
	}
	in := []Source{src(a, "1", "2"), src(a, "3"), src(b, "4"), src(a, "5"), src(a, "6")}
	got := byStore(in)
	want := []struct {
		st   *store.Store
		keys []string
	}{{a, []string{"1", "2", "3"}}, {b, []string{"4"}}, {a, []string{"5", "6"}}}
	if len(got) != len(want) {
		t.Fatalf("%d groups, want %d", len(got), len(want))
	}
	for i, g := range got {
		var keys []string
		for _, o := range g.List {
			keys = append(keys, o.Key)
		}
		if g.Store != want[i].st || !slices.Equal(keys, want[i].keys) {
			t.Errorf("group %d: %v, want %v", i, keys, want[i].keys)
		}
	}
	if len(in[0].List) != 2 || len(in[3].List) != 1 {
		t.Errorf("the sources' own lists changed: %d, %d objects", len(in[0].List), len(in[3].List))
	}
}
