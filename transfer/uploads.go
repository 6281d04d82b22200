package transfer

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// Uploads lists the multipart uploads pending under prefix in st (started,
// neither completed nor aborted), in key order: all of them when before
// is zero, else those started no later than before. The listing is
// retried as a whole (internal/retry), so st should make one attempt per
// request.
func Uploads(ctx context.Context, st *store.Store, prefix string, before time.Time) ([]store.Upload, error) {
	var ups []store.Upload
	err := retry.Policy{}.Do(ctx, func() error {
		ups = ups[:0]
		return st.ListUploads(ctx, prefix, func(u store.Upload) error {
			if before.IsZero() || !u.Initiated.After(before) {
				ups = append(ups, u)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return ups, nil
}

// AbortUpload aborts u, retried. An upload gone meanwhile (completed or
// aborted by someone else) is no error: what was asked is done.
func AbortUpload(ctx context.Context, st *store.Store, u store.Upload) error {
	err := retry.Policy{}.Do(ctx, func() error { return st.AbortUpload(ctx, u.Key, u.ID) })
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
