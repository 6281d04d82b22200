package store_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// TestListLevel: a level's prefixes and objects, names relative to Dir,
// on a store where d is a prefix only and b both an object and a prefix.
func TestListLevel(t *testing.T) {
	ctx := t.Context()
	st, _, err := store.Open(ctx, "mem://level/", store.Options{MemBuckets: store.NewMemBuckets()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, k := range []string{"b", "b/1", "d/x", "d/y/1", "d/y/2", "d/z/1", "dd"} {
		if _, err := st.Put(ctx, k, strings.NewReader(k), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	show := func(l store.Level) string {
		var names []string
		for _, o := range l.Objects {
			names = append(names, strings.TrimPrefix(o.Key, l.Dir))
		}
		return fmt.Sprintf("%s %v %v", l.Dir, l.Prefixes, names)
	}
	for _, c := range []struct {
		key       string
		recursive bool
		want      string
	}{
		{"", false, " [b/ d/] [b dd]"},
		{"d/", false, "d/ [y/ z/] [x]"},
		{"d", false, "d/ [y/ z/] [x]"},       // a prefix without its slash: the directory
		{"b", false, " [b/] [b]"},            // an object of the name: names at its level
		{"d", true, "d/ [] [x y/1 y/2 z/1]"}, // every object below
		{"d/y/*", false, "d/y/ [] [1 2]"},    // a glob's matches
		{"nothing", false, " [] []"},
	} {
		l, err := store.ListLevel(ctx, st, c.key, c.recursive)
		if err != nil {
			t.Fatal(err)
		}
		if got := show(l); got != c.want {
			t.Errorf("ListLevel(%q, %v) = %q, want %q", c.key, c.recursive, got, c.want)
		}
	}
}
