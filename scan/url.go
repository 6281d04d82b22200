package scan

import (
	"context"
	"errors"

	"github.com/sluice-data/sluice/store"
)

// storeConcurrency is the most requests a dataset's fetcher grows to
// (fetch.Options.MaxInFlight's default): the S3 transport keeps that many
// connections, as the sluice command does.
const storeConcurrency = 64

// OpenURL opens the store url names and the dataset under it, as Open
// does: url is a store URL (s3://bucket/prefix, file:///dir, a plain
// path, mem://name/...) whose key is one object, a prefix or a glob (see
// the package documentation). The store is opened with opts.StoreOptions
// set as the sluice command sets them where left zero: connections for
// the requests fetch keeps in flight, and one attempt per request in
// the S3 driver, since scan and fetch retry above the store and stacked
// retries multiply. Close the Dataset to close the store.
//
// opts.Fetcher must be nil: a fetcher reads one store, and this one is new.
func OpenURL(ctx context.Context, url string, opts Options) (*Dataset, error) {
	if opts.Fetcher != nil {
		return nil, errors.New("scan: OpenURL opens its own store, so Options.Fetcher (over another) cannot serve it")
	}
	so := opts.StoreOptions
	if so.Concurrency <= 0 {
		so.Concurrency = storeConcurrency
	}
	if so.Attempts <= 0 {
		so.Attempts = 1
	}
	// A glob's directory is what the store opens; the glob is a key in it.
	base, rest := store.SplitGlob(url)
	st, key, err := store.Open(ctx, base, so)
	if err != nil {
		return nil, err
	}
	d, err := Open(ctx, st, key+rest, opts)
	if err != nil {
		st.Close()
		return nil, err
	}
	d.owned = true
	return d, nil
}

// Close closes the store OpenURL opened for the dataset; scans of it must
// be closed first. For a Dataset of Open it does nothing: the store is
// the caller's.
func (d *Dataset) Close() error {
	if !d.owned {
		return nil
	}
	d.owned = false
	return d.st.Close()
}
