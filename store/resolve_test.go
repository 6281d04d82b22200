package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// TestResolve: the one meaning of a URL's key, on a store where b is both
// an object and a prefix and a has siblings on both sides of "a/".
func TestResolve(t *testing.T) {
	ctx := t.Context()
	for _, url := range []string{"mem://resolve/", "file://" + t.TempDir() + "/"} {
		st, _, err := store.Open(ctx, url, store.Options{MemBuckets: store.NewMemBuckets()})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		keys := []string{"a-2", "a.bak", "a/x", "a/y/z", "a0", "c/d.parquet", "c/e.csv", "c/f/g.parquet"}
		isMem := strings.HasPrefix(url, "mem:")
		if isMem {
			keys = append(keys, "b", "b/c") // a file store cannot hold both
		}
		for _, k := range keys {
			if _, err := st.Put(ctx, k, strings.NewReader(k), store.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			key, root string
			one       bool
			want      []string
			memOnly   bool
		}{
			{key: "a/", root: "a/", want: []string{"a/x", "a/y/z"}},
			{key: "a", root: "a/", want: []string{"a/x", "a/y/z"}},
			{key: "a/x", root: "a/", one: true, want: []string{"a/x"}},
			{key: "a-2", root: "", one: true, want: []string{"a-2"}},
			{key: "b", root: "", one: true, want: []string{"b"}, memOnly: true},
			{key: "b/", root: "b/", want: []string{"b/c"}, memOnly: true},
			{key: "c/*.parquet", root: "c/", want: []string{"c/d.parquet"}},
			{key: "c/*/*.parquet", root: "c/", want: []string{"c/f/g.parquet"}},
			{key: "c/d", root: "c/d/"},
			{key: "zz/", root: "zz/"},
			{key: "", root: "", want: keysSorted(keys)},
		} {
			if c.memOnly && !isMem {
				continue
			}
			r, err := store.Resolve(ctx, st, c.key)
			if err != nil {
				t.Errorf("%s: Resolve(%q): %v", url, c.key, err)
				continue
			}
			var got []string
			for _, o := range r.List {
				got = append(got, o.Key)
			}
			if r.Root != c.root || r.One != c.one || !slices.Equal(got, c.want) {
				t.Errorf("%s: Resolve(%q) = root %q, one %v, %q; want %q, %v, %q", url, c.key, r.Root, r.One, got, c.root, c.one, c.want)
			}
		}
		if _, err := store.Resolve(ctx, st, "c/[x"); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: a bad glob: %v, want ErrInvalid", url, err)
		}
	}
}

func keysSorted(keys []string) []string {
	s := slices.Clone(keys)
	slices.Sort(s)
	return s
}

// TestResolveURL opens the part of a URL before its glob.
func TestResolveURL(t *testing.T) {
	ctx := t.Context()
	buckets := store.NewMemBuckets()
	set := store.NewSet(func(ctx context.Context, url string) (*store.Store, string, error) {
		return store.Open(ctx, url, store.Options{MemBuckets: buckets})
	})
	defer set.Close()
	st, _, err := set.Open(ctx, "mem://ru/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"d/1.csv", "d/2.csv", "d/x.parquet"} {
		if _, err := st.Put(ctx, k, strings.NewReader(k), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, r, err := store.ResolveURL(ctx, set.Open, "mem://ru/d/*.csv")
	if err != nil || got != st || r.Root != "d/" || len(r.List) != 2 {
		t.Errorf("ResolveURL = %p, %+v, %v; want the set's store, root d/ and 2 objects", got, r, err)
	}
}
