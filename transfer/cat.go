package transfer

import (
	"context"
	"fmt"
	"io"

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
