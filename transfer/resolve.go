package transfer

import (
	"context"
	"errors"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// Source is the objects a URL names, with the store that holds them.
type Source struct {
	Store *store.Store
	store.Objects
}

// Resolve opens url with open and finds the objects it names
// (store.Resolve), the listing retried as a whole so that a throttled page
// never leaves a partial one. A URL that names nothing is an error
// matching store.ErrNotFound, in the words of its form. The store is
// open's, as its Opener contract says.
func Resolve(ctx context.Context, open store.Opener, url string) (Source, error) {
	base, rest := store.SplitGlob(url)
	st, key, err := open(ctx, base)
	if err != nil {
		return Source{}, err
	}
	key += rest
	var r store.Objects
	err = retry.Policy{}.Do(ctx, func() (err error) {
		r, err = store.Resolve(ctx, st, key)
		return err
	})
	if err != nil {
		return Source{}, err
	}
	if len(r.List) == 0 {
		return Source{}, notFound(st, key)
	}
	return Source{Store: st, Objects: r}, nil
}

// ResolveAll resolves urls concurrently (each is a round trip or more),
// keeping their order; the first error in that order is returned.
func ResolveAll(ctx context.Context, open store.Opener, urls []string) ([]Source, error) {
	out := make([]Source, len(urls))
	errs := make([]error, len(urls))
	var g errgroup.Group
	g.SetLimit(16)
	for i, u := range urls {
		g.Go(func() error {
			out[i], errs[i] = Resolve(ctx, open, u)
			return nil
		})
	}
	g.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// notFound says that key names nothing in st, in the words of its form.
func notFound(st *store.Store, key string) error {
	what := "no object or prefix of this name"
	switch {
	case store.IsGlob(key):
		what = "no object matches"
	case key == "" || strings.HasSuffix(key, "/"):
		what = "no objects under this prefix"
	}
	return &store.Error{Op: "list", URL: st.URL(key), Kind: store.KindNotFound, Err: errors.New(what)}
}
