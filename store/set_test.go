package store_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// countClose counts the closes of the stores it wraps.
type countClose struct {
	store.Driver
	n *atomic.Int32
}

func (c countClose) Close() error {
	c.n.Add(1)
	return c.Driver.Close()
}

// TestSet: a Set gives every URL of one base the same store, keeps
// stores opened With another id apart, and closes each store it opened
// exactly once (the duplicates at once, the kept ones at Close).
func TestSet(t *testing.T) {
	ctx := t.Context()
	buckets := store.NewMemBuckets()
	var opened, closed atomic.Int32
	open := func(ctx context.Context, url string) (*store.Store, string, error) {
		st, key, err := store.Open(ctx, url, store.Options{MemBuckets: buckets})
		if err != nil {
			return nil, "", err
		}
		opened.Add(1)
		return store.New(countClose{st.Driver(), &closed}, st.URL("")), key, nil
	}
	s := store.NewSet(open)
	a, ka, err := s.Open(ctx, "mem://a/x/y.bin")
	if err != nil {
		t.Fatal(err)
	}
	a2, ka2, err := s.Open(ctx, "mem://a/z")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := s.Open(ctx, "mem://b/")
	if err != nil {
		t.Fatal(err)
	}
	if a != a2 || a == b {
		t.Errorf("mem://a twice gave %p and %p, mem://b %p: want one store per base", a, a2, b)
	}
	if ka != "x/y.bin" || ka2 != "z" {
		t.Errorf("keys %q, %q; want x/y.bin, z", ka, ka2)
	}
	linked := s.With("slow", open)
	l, _, err := linked(ctx, "mem://a/")
	if err != nil {
		t.Fatal(err)
	}
	l2, _, err := linked(ctx, "mem://a/q")
	if err != nil {
		t.Fatal(err)
	}
	if l == a || l != l2 {
		t.Errorf("With gave %p and %p beside %p: want its own store, shared within the id", l, l2, a)
	}
	if _, _, err := s.Open(ctx, "bogus://x"); err == nil {
		t.Error("an opener's error was not returned")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if o, c := opened.Load(), closed.Load(); o != 5 || c != 5 {
		t.Errorf("%d stores opened, %d closed; want 5 and 5", o, c)
	}
}
