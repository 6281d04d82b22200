// Package gcs is the gs:// store: Google Cloud Storage through the
// official SDK. Importing it registers the scheme with package store, so
// that only programs that import it carry the SDK.
package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/sluice-data/sluice/store"
)

func init() { store.RegisterScheme("gs", open) }

// gcsDriver is a Google Cloud Storage bucket, through the official SDK:
// credentials from Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's, the metadata server), or
// none against an emulator named by STORAGE_EMULATOR_HOST. An object's
// version is its generation: reads pin it with a generation precondition.
type gcsDriver struct {
	client *storage.Client
	bucket *storage.BucketHandle
}

func open(ctx context.Context, bucket string, opts store.Options) (store.Driver, error) {
	copts := []option.ClientOption{storage.WithJSONReads()}
	client, err := storage.NewClient(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("no Google Cloud credentials: %v (set GOOGLE_APPLICATION_CREDENTIALS, run gcloud auth application-default login, or STORAGE_EMULATOR_HOST for an emulator)", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	// The SDK's own retries: Options.Attempts tries of a request (3 by
	// default); a caller that retries above the store asks for 1.
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	retry := storage.WithMaxAttempts(attempts)
	if attempts == 1 {
		retry = storage.WithPolicy(storage.RetryNever)
	}
	return &gcsDriver{client: client, bucket: client.Bucket(bucket).Retryer(retry)}, nil
}

// gcsTag is an object's ETag as this driver gives it: its generation.
func gcsTag(gen int64) string { return strconv.FormatInt(gen, 10) }

func gcsInfo(a *storage.ObjectAttrs) store.ObjectInfo {
	return store.ObjectInfo{Key: a.Name, Size: a.Size, ETag: gcsTag(a.Generation), ModTime: a.Updated}
}

func (d *gcsDriver) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	q := &storage.Query{Prefix: prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Generation", "Updated"}); err != nil {
		return err
	}
	it := d.bucket.Objects(ctx, q)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(gcsInfo(a)); err != nil {
			return err
		}
	}
}

func (d *gcsDriver) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	a, err := d.bucket.Object(key).Attrs(ctx)
	if err != nil {
		return store.ObjectInfo{}, err
	}
	return gcsInfo(a), nil
}

func (d *gcsDriver) ReadRange(ctx context.Context, key string, r store.Range, opts store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	obj := d.bucket.Object(key)
	if opts.IfMatch != "" {
		gen, err := strconv.ParseInt(opts.IfMatch, 10, 64)
		if err != nil {
			return nil, store.ObjectInfo{}, &googleapi.Error{Code: http.StatusPreconditionFailed, Message: "not this store's version tag: " + opts.IfMatch}
		}
		obj = obj.Generation(gen)
	}
	off, n := r.Off, r.Len
	if off < 0 {
		n = -1
	}
	rd, err := obj.NewRangeReader(ctx, off, n)
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code == http.StatusRequestedRangeNotSatisfiable || err == nil && n == 0 {
		// At or past the end (or nothing asked for): an empty body, and
		// the object's size.
		if rd != nil {
			rd.Close()
		}
		a, err := obj.Attrs(ctx)
		if err != nil {
			return nil, store.ObjectInfo{}, err
		}
		return io.NopCloser(strings.NewReader("")), gcsInfo(a), nil
	}
	if err != nil {
		if opts.IfMatch != "" && errors.Is(err, storage.ErrObjectNotExist) {
			// The generation pinned is gone: the object was replaced (or
			// deleted, which Stat tells apart).
			if _, serr := d.bucket.Object(key).Attrs(ctx); serr == nil {
				return nil, store.ObjectInfo{}, &googleapi.Error{Code: http.StatusPreconditionFailed, Message: "the object changed since generation " + opts.IfMatch}
			}
		}
		return nil, store.ObjectInfo{}, err
	}
	return rd, store.ObjectInfo{Key: key, Size: rd.Attrs.Size, ETag: gcsTag(rd.Attrs.Generation), ModTime: rd.Attrs.LastModified}, nil
}

// gcsWriter is a resumable upload: nothing is visible until Close
// commits it; Abort cancels it, which leaves no object.
type gcsWriter struct {
	w      *storage.Writer
	cancel context.CancelFunc
	once   sync.Once
	closed bool
}

func (d *gcsDriver) NewWriter(ctx context.Context, key string, opts store.WriteOptions) (store.DriverWriter, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := d.bucket.Object(key).NewWriter(ctx)
	// Parts of the size asked for (the SDK's 16 MiB otherwise), rounded
	// to its 256 KiB unit; an object smaller than one goes in one request.
	if opts.PartSize > 0 {
		w.ChunkSize = int(max(256<<10, (opts.PartSize+256<<10-1)/(256<<10)*(256<<10)))
	}
	if opts.Stored != nil {
		var last int64
		w.ProgressFunc = func(n int64) {
			opts.Stored(n - last)
			last = n
		}
	}
	return &gcsWriter{w: w, cancel: cancel}, nil
}

func (w *gcsWriter) Write(p []byte) (int, error) { return w.w.Write(p) }

func (w *gcsWriter) Close() error {
	w.closed = true
	err := w.w.Close()
	w.cancel()
	return err
}

func (w *gcsWriter) Abort() error {
	if w.closed {
		return nil
	}
	w.once.Do(func() {
		w.cancel()
		w.w.Close() // fails, cancelled: the upload is dropped
	})
	return nil
}

func (d *gcsDriver) Delete(ctx context.Context, key string) error {
	return d.bucket.Object(key).Delete(ctx)
}

func (d *gcsDriver) Classify(err error) store.Kind {
	var ge *googleapi.Error
	switch {
	case errors.Is(err, storage.ErrObjectNotExist), errors.Is(err, storage.ErrBucketNotExist):
		return store.KindNotFound
	case errors.As(err, &ge):
		return store.KindOfStatus(ge.Code)
	}
	return store.KindOfTransport(err)
}

func (d *gcsDriver) Close() error { return d.client.Close() }
