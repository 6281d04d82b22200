package transfer

import (
	"context"
	"errors"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// DefaultRemoveWorkers is how many deletes Remove has in flight by
// default: one round trip each, so a prefix of many objects is
// latency-bound without them.
const DefaultRemoveWorkers = 16

// ErrPrefix is Remove's refusal, without Recursive, of a key that names a
// prefix (ends in /, or has objects under key/): one mistyped URL must not
// delete a tree.
var ErrPrefix = errors.New("names a prefix: removing it takes Recursive")

// RemoveOptions configure Remove.
type RemoveOptions struct {
	// Recursive removes every object under the key, a prefix (written
	// with or without its slash), instead of the one object it names.
	Recursive bool
	// DryRun deletes nothing; Removed is called for each object that
	// would be deleted, in key order.
	DryRun bool
	// Workers is how many deletes are in flight at once (default
	// DefaultRemoveWorkers).
	Workers int
	// Removed, when set, is called with each object's URL once it is
	// deleted, one call at a time.
	Removed func(url string)
}

// Remove deletes the object key names in st, or with opts.Recursive every
// object under it, as the aws CLI's "s3 rm" does: "li" names li and what
// is under li/, never li-2. Every request is retried (internal/retry), so
// st should make one attempt per request. A key that names nothing is an
// error matching store.ErrNotFound; a prefix without Recursive is
// ErrPrefix, and nothing is deleted. Of several objects listed, one
// deleted by someone else before its turn is no error.
func Remove(ctx context.Context, st *store.Store, key string, opts RemoveOptions) error {
	keys, err := toRemove(ctx, st, key, opts.Recursive)
	if err != nil {
		return err
	}
	return deleteKeys(ctx, st, keys, opts)
}

// toRemove is what Remove deletes.
func toRemove(ctx context.Context, st *store.Store, key string, recursive bool) ([]string, error) {
	policy := retry.Policy{}
	if !recursive {
		if key == "" || strings.HasSuffix(key, "/") {
			return nil, ErrPrefix
		}
		err := policy.Do(ctx, func() error {
			_, err := st.Stat(ctx, key)
			return err
		})
		if errors.Is(err, store.ErrNotFound) {
			objs, lerr := listRetried(ctx, st, key+"/")
			if lerr == nil && len(objs) > 0 {
				return nil, ErrPrefix
			}
		}
		if err != nil {
			return nil, err
		}
		return []string{key}, nil
	}
	objs, err := listRetried(ctx, st, key)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, o := range objs {
		if key == "" || strings.HasSuffix(key, "/") || o.Key == key || strings.HasPrefix(o.Key, key+"/") {
			keys = append(keys, o.Key)
		}
	}
	if len(keys) == 0 {
		return nil, &store.Error{Op: "delete", URL: st.URL(key), Kind: store.KindNotFound, Err: errors.New("no objects under this prefix")}
	}
	return keys, nil
}

// deleteKeys deletes keys, several at once.
func deleteKeys(ctx context.Context, st *store.Store, keys []string, opts RemoveOptions) error {
	var mu sync.Mutex
	removed := func(key string) {
		if opts.Removed == nil {
			return
		}
		mu.Lock()
		opts.Removed(st.URL(key))
		mu.Unlock()
	}
	if opts.DryRun {
		for _, k := range keys {
			removed(k)
		}
		return nil
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = DefaultRemoveWorkers
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, k := range keys {
		g.Go(func() error {
			err := retry.Policy{}.Do(gctx, func() error { return st.Delete(gctx, k) })
			if errors.Is(err, store.ErrNotFound) && len(keys) > 1 {
				return nil // listed, then deleted by someone else
			}
			if err != nil {
				return err
			}
			removed(k)
			return nil
		})
	}
	return g.Wait()
}

// listRetried lists prefix, the listing retried as a whole.
func listRetried(ctx context.Context, st *store.Store, prefix string) ([]store.ObjectInfo, error) {
	var objs []store.ObjectInfo
	err := retry.Policy{}.Do(ctx, func() (err error) {
		objs, err = st.List(ctx, prefix)
		return err
	})
	return objs, err
}
