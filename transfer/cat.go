package transfer

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/store"
)

// Cat writes the bytes of objects of st to w, one object after another in
// the order given. Many ranges are in flight at once, so even one large
// object streams as fast as the link allows, and the output is still
// strictly in order. Each object is read from one version (its ETag, when
// given): one replaced meanwhile stops Cat with an error, and what was
// written stays written. opts.Progress hears of bytes as w takes them.
func Cat(ctx context.Context, w io.Writer, st *store.Store, objects []store.ObjectInfo, opts Options) (fetch.Stats, error) {
	p := fetch.New(st, opts.Fetch).Plan(ctx, windowRequests(objects))
	defer p.Close()
	for {
		u, err := p.Next(ctx)
		if err == io.EOF {
			return p.Stats(), nil
		}
		if err != nil {
			return p.Stats(), err
		}
		n, err := u.WriteTo(w)
		u.Release()
		opts.progress(n)
		if err != nil {
			return p.Stats(), fmt.Errorf("write output: %w", err)
		}
	}
}

// CatSources writes the objects of sources to w, one after another in the
// order given, as Cat does. Consecutive sources in one store share a plan,
// so that a list of small objects is fetched concurrently, not one round
// trip at a time. The statistics are summed over the plans, on error too.
func CatSources(ctx context.Context, w io.Writer, sources []Source, opts Options) (fetch.Stats, error) {
	var total fetch.Stats
	for _, g := range byStore(sources) {
		s, err := Cat(ctx, w, g.Store, g.List, opts)
		total.Add(s)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// byStore joins the object lists of consecutive sources in one store.
// The sources keep theirs.
func byStore(sources []Source) []Source {
	var groups []Source
	for _, g := range sources {
		if n := len(groups); n > 0 && groups[n-1].Store == g.Store {
			groups[n-1].List = append(groups[n-1].List, g.List...)
		} else {
			g.List = slices.Clone(g.List)
			groups = append(groups, g)
		}
	}
	return groups
}
