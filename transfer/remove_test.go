package transfer_test

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

// removeFixture puts keys (each a small object) into a fresh mem:// store.
func removeFixture(t *testing.T, keys ...string) *store.Store {
	t.Helper()
	st, _, err := store.Open(t.Context(), "mem://rm/", store.Options{MemBuckets: store.NewMemBuckets()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, k := range keys {
		if _, err := st.Put(t.Context(), k, bytes.NewReader([]byte(k)), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

func keysOf(t *testing.T, st *store.Store) []string {
	t.Helper()
	objs, err := st.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// TestRemove: what each form of key deletes, what is left, and what each
// deletion reports.
func TestRemove(t *testing.T) {
	all := []string{"d-2", "d/a", "d/sub/b", "e", "top"} // in key order
	for _, c := range []struct {
		key       string
		recursive bool
		removed   []string // the keys reported (and gone)
		err       error    // what the error matches, if any
	}{
		{"top", false, []string{"top"}, nil},
		{"d", true, []string{"d/a", "d/sub/b"}, nil}, // never d-2
		{"d/", true, []string{"d/a", "d/sub/b"}, nil},
		{"d/sub", true, []string{"d/sub/b"}, nil},
		{"", true, all, nil},
		{"d", false, nil, transfer.ErrPrefix}, // objects under d/
		{"d/", false, nil, transfer.ErrPrefix},
		{"", false, nil, transfer.ErrPrefix},
		{"nothing", false, nil, store.ErrNotFound},
		{"nothing", true, nil, store.ErrNotFound},
		{"d/s", true, nil, store.ErrNotFound}, // d/sub/b only starts with it
	} {
		st := removeFixture(t, all...)
		var mu sync.Mutex
		var removed []string
		err := transfer.Remove(t.Context(), st, c.key, transfer.RemoveOptions{
			Recursive: c.recursive, Workers: 2,
			Removed: func(url string) { mu.Lock(); removed = append(removed, url); mu.Unlock() },
		})
		if c.err != nil {
			if !errors.Is(err, c.err) || len(removed) > 0 || len(keysOf(t, st)) != len(all) {
				t.Errorf("Remove(%q, recursive %v): %v, removed %v; want %v and nothing removed", c.key, c.recursive, err, removed, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Remove(%q, recursive %v): %v", c.key, c.recursive, err)
			continue
		}
		slices.Sort(removed)
		var want, left []string
		for _, k := range c.removed {
			want = append(want, st.URL(k))
		}
		for _, k := range all {
			if !slices.Contains(c.removed, k) {
				left = append(left, k)
			}
		}
		if !slices.Equal(removed, want) || !slices.Equal(keysOf(t, st), left) {
			t.Errorf("Remove(%q, recursive %v): reported %v, left %v; want %v, left %v", c.key, c.recursive, removed, keysOf(t, st), want, left)
		}
	}
}

// A dry run reports, in key order, what it would delete, and deletes
// nothing.
func TestRemoveDryRun(t *testing.T) {
	all := []string{"p/1", "p/2", "p/3/x", "q"}
	st := removeFixture(t, all...)
	var removed []string
	err := transfer.Remove(t.Context(), st, "p/", transfer.RemoveOptions{Recursive: true, DryRun: true,
		Removed: func(url string) { removed = append(removed, url) }})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{st.URL("p/1"), st.URL("p/2"), st.URL("p/3/x")}; !slices.Equal(removed, want) {
		t.Errorf("reported %v, want %v", removed, want)
	}
	if got := keysOf(t, st); !slices.Equal(got, all) {
		t.Errorf("a dry run deleted: %v left", got)
	}
}
