package transfer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

func TestResolveAllKeepsOrderAndSaysNotFound(t *testing.T) {
	ctx := context.Background()
	stores := store.NewSet(func(ctx context.Context, url string) (*store.Store, string, error) {
		return store.Open(ctx, url, store.Options{MemBuckets: store.NewMemBuckets()})
	})
	defer stores.Close()
	st, _, err := stores.Open(ctx, "mem://resolve/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a/1", "a/2", "b"} {
		if _, err := st.Put(ctx, k, strings.NewReader(k), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := transfer.ResolveAll(ctx, stores.Open, []string{"mem://resolve/b", "mem://resolve/a/", "mem://resolve/a/*"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got[0].One || len(got[1].List) != 2 || len(got[2].List) != 2 || got[0].Store != st {
		t.Errorf("got %+v", got)
	}
	for url, words := range map[string]string{
		"mem://resolve/c":   "no object or prefix of this name",
		"mem://resolve/c/":  "no objects under this prefix",
		"mem://resolve/c/*": "no object matches",
	} {
		_, err := transfer.ResolveAll(ctx, stores.Open, []string{"mem://resolve/b", url})
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), words) {
			t.Errorf("%s: %v, want not found: %s", url, err, words)
		}
	}
}
