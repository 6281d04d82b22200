package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"
)

// Options configure Open. The zero value is usable.
type Options struct {
	// Endpoint overrides the S3 endpoint (else AWS_ENDPOINT_URL, else AWS).
	Endpoint string
	// Region for S3 (else AWS_REGION / shared config, else us-east-1).
	Region string
	// AccessKeyID and SecretAccessKey, when both set, are static S3
	// credentials used instead of the standard credential chain.
	AccessKeyID, SecretAccessKey string
	// Concurrency is how many requests the caller intends to keep in
	// flight; the S3 transport keeps at least that many idle connections.
	Concurrency int
	// Attempts is how many times the S3 driver itself tries one request
	// (the SDK's retries). Zero means 3. A caller that retries above the
	// store (fetch, scan, internal/retry) sets 1, so that retries do not
	// multiply. The parts of a multipart upload keep at least 3: no caller
	// can retry one part.
	Attempts int
	// StallTimeout cancels an S3 response body that makes no progress for
	// this long. Zero means 30s; negative disables the watchdog.
	StallTimeout time.Duration
	// Wrap, when set, wraps the opened driver (the link model uses this).
	Wrap func(Driver) Driver
	// MemBuckets are the buckets mem://name URLs name. Nil, every Open
	// of a mem:// URL makes a new empty bucket, which lives as long as
	// the returned Store.
	MemBuckets *MemBuckets
}

// Store is a bucket (or directory, or in-memory namespace) of objects. It
// validates keys, wraps every driver error in *Error with its Kind, and is
// safe for concurrent use.
type Store struct {
	d    Driver
	base string // URL prefix that keys are appended to, e.g. "s3://bucket/"
}

// New wraps a driver. base is used only to name objects in errors and URL().
func New(d Driver, base string) *Store {
	if base != "" && !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return &Store{d: d, base: base}
}

// Open opens the store a URL names and returns it with the key or prefix
// the URL points at inside it:
//
//	s3://bucket/prefix    S3 or any S3-compatible endpoint (AWS_ENDPOINT_URL, --endpoint)
//	file:///dir/prefix    a local directory; plain paths work too
//	mem://name/prefix     an in-process store, shared by the Opens with the same Options.MemBuckets
//	gs://bucket/prefix    Google Cloud Storage, where package store/gcs is imported
//	az://container/prefix Azure Blob Storage, where package store/azure is imported
//	https://host/path     one object on a web server (http:// too), read-only: HTTP cannot list
//
// For files, the store is rooted at the named directory (or the parent of a
// named file) and keys cannot leave it.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, string, error) {
	d, base, key, err := openDriver(ctx, rawURL, opts)
	if err != nil {
		return nil, "", err
	}
	if opts.Wrap != nil {
		d = opts.Wrap(d)
	}
	return New(d, base), key, nil
}

func openDriver(ctx context.Context, rawURL string, opts Options) (Driver, string, string, error) {
	invalid := func(format string, a ...any) error {
		return &Error{Op: "open", URL: rawURL, Kind: KindInvalid, Err: fmt.Errorf(format, a...)}
	}
	if rawURL == "" {
		return nil, "", "", invalid("empty URL")
	}
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		if s, _, ok := strings.Cut(rawURL, ":"); ok && urlSchemes[strings.ToLower(s)] {
			// "s3:/bucket/key" or "s3:bucket": a URL missing a slash, not
			// a local file named so.
			return nil, "", "", invalid("not a URL: write %s://%s", strings.ToLower(s), strings.TrimLeft(rawURL[len(s)+1:], "/"))
		}
		if s, rest, ok := strings.Cut(rawURL, "//"); ok && urlSchemes[strings.ToLower(s)] {
			// "s3//bucket/key": a URL missing its colon, not a local
			// directory named s3 (which ./s3//bucket still names).
			return nil, "", "", invalid("not a URL: write %s://%s", strings.ToLower(s), rest)
		}
		return openFile(rawURL, rawURL)
	}
	switch scheme {
	case "file":
		u, err := url.Parse(rawURL)
		if err != nil {
			return nil, "", "", invalid("%v", err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return nil, "", "", invalid("file URLs take no host (use file:///abs/path)")
		}
		return openFile(rawURL, u.Path)
	case "mem":
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, "", "", invalid("missing name (use mem://name/prefix)")
		}
		return opts.MemBuckets.bucket(bucket), "mem://" + bucket + "/", key, nil
	case "s3":
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, "", "", invalid("missing bucket (use s3://bucket/prefix)")
		}
		d, err := openS3(ctx, bucket, opts)
		if err != nil {
			return nil, "", "", &Error{Op: "open", URL: rawURL, Kind: KindInvalid, Err: err}
		}
		return d, "s3://" + bucket + "/", key, nil
	case "http", "https":
		return openHTTP(rawURL, opts)
	}
	if open, ok := registered(scheme); ok {
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, "", "", invalid("missing bucket (use %s://bucket/prefix)", scheme)
		}
		d, err := open(ctx, bucket, opts)
		if err != nil {
			// An opener's error is most often its credentials'; one that
			// says its kind keeps it.
			kind := KindOf(err)
			if kind == KindUnknown {
				kind = KindPermission
			}
			return nil, "", "", &Error{Op: "open", URL: rawURL, Kind: kind, Err: err}
		}
		return d, scheme + "://" + bucket + "/", key, nil
	}
	switch scheme {
	case "gs":
		return nil, "", "", invalid(`gs:// is in package store/gcs: import _ "github.com/sluice-data/sluice/store/gcs"`)
	case "az", "abfs", "abfss":
		return nil, "", "", invalid(`%s:// is in package store/azure: import _ "github.com/sluice-data/sluice/store/azure"`, scheme)
	}
	return nil, "", "", invalid("unknown scheme %q (want s3://, gs://, az://, file://, mem:// or https://)", scheme)
}

// SchemeOpener opens the driver of a bucket of a scheme that a package
// outside store provides (gs:// by store/gcs), so that only programs that
// import it carry its SDK.
type SchemeOpener func(ctx context.Context, bucket string, opts Options) (Driver, error)

var schemes sync.Map // scheme -> SchemeOpener

// RegisterScheme makes Open take scheme://bucket/key URLs to open; a
// package that provides a store calls it in its init.
func RegisterScheme(scheme string, open SchemeOpener) { schemes.Store(scheme, open) }

func registered(scheme string) (SchemeOpener, bool) {
	v, ok := schemes.Load(scheme)
	if !ok {
		return nil, false
	}
	return v.(SchemeOpener), true
}

// urlSchemes are the schemes that, written with fewer than two slashes
// ("s3:/bucket"), are taken for a mistyped URL rather than a local path.
var urlSchemes = map[string]bool{
	"s3": true, "s3a": true, "file": true, "mem": true,
	"gs": true, "az": true, "abfs": true, "abfss": true, "http": true, "https": true,
}

// URL names a key of this store.
func (s *Store) URL(key string) string { return s.base + key }

// Driver returns the underlying driver, for wrappers such as the link model.
func (s *Store) Driver() Driver { return s.d }

func (s *Store) wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	k := s.d.Classify(err)
	if k == KindUnknown {
		k = KindOf(err)
	}
	if k == KindUnknown {
		k = KindPermanent
	}
	return &Error{Op: op, URL: s.URL(key), Kind: k, Err: err}
}

func checkKey(key string, prefix bool) error {
	if key == "" && !prefix {
		return errors.New("empty key")
	}
	if strings.HasPrefix(key, "/") {
		return errors.New("key must be relative")
	}
	for _, part := range strings.Split(key, "/") {
		if part == ".." {
			return errors.New("key may not contain '..'")
		}
	}
	return nil
}

func (s *Store) invalid(op, key string, err error) error {
	return &Error{Op: op, URL: s.URL(key), Kind: KindInvalid, Err: err}
}

// Walk calls fn for every object under prefix, in key order.
func (s *Store) Walk(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := checkKey(prefix, true); err != nil {
		return s.invalid("list", prefix, err)
	}
	var fnErr error
	err := s.d.List(ctx, prefix, func(o ObjectInfo) error {
		if err := fn(o); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	if fnErr != nil && errors.Is(err, fnErr) {
		return fnErr
	}
	return s.wrap("list", prefix, err)
}

// IsGlob reports whether a key is a pattern: it has one of path.Match's
// metacharacters *, ? or [.
func IsGlob(key string) bool { return strings.ContainsAny(key, "*?[") }

// SplitGlob cuts a URL (or key) with a glob into the part a store opens
// on, up to the last / before the first wildcard, and the pattern after
// it; a URL without a wildcard is all base.
func SplitGlob(url string) (base, pattern string) {
	i := strings.IndexAny(url, "*?[")
	if i < 0 {
		return url, ""
	}
	j := strings.LastIndex(url[:i], "/")
	return url[:j+1], url[j+1:]
}

// Glob calls fn for every object whose key matches pattern (path.Match:
// '*' and '?' do not cross a '/'), in key order. Only the objects under
// the pattern's literal prefix are listed.
func (s *Store) Glob(ctx context.Context, pattern string, fn func(ObjectInfo) error) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return s.invalid("list", pattern, fmt.Errorf("bad glob: %v", err))
	}
	lit := pattern
	if i := strings.IndexAny(pattern, "*?[\\"); i >= 0 {
		lit = pattern[:i]
	}
	return s.Walk(ctx, lit, func(o ObjectInfo) error {
		if ok, _ := path.Match(pattern, o.Key); ok {
			return fn(o)
		}
		return nil
	})
}

// List returns every object under prefix, in key order.
func (s *Store) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := s.Walk(ctx, prefix, func(o ObjectInfo) error {
		out = append(out, o)
		return nil
	})
	return out, err
}

// Stat describes one object.
func (s *Store) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := checkKey(key, false); err != nil {
		return ObjectInfo{}, s.invalid("stat", key, err)
	}
	o, err := s.d.Stat(ctx, key)
	return o, s.wrap("stat", key, err)
}

// ReadRange opens a byte range of an object; see Range and ReadOptions.
// The info returned has the object's full size and ETag.
func (s *Store) ReadRange(ctx context.Context, key string, r Range, opts ReadOptions) (io.ReadCloser, ObjectInfo, error) {
	if err := checkKey(key, false); err != nil {
		return nil, ObjectInfo{}, s.invalid("read", key, err)
	}
	if r.Off >= 0 && r.Len == 0 {
		return io.NopCloser(bytes.NewReader(nil)), ObjectInfo{}, s.invalid("read", key, errors.New("zero-length range"))
	}
	if r.Off < 0 && r.Len >= 0 {
		return nil, ObjectInfo{}, s.invalid("read", key, errors.New("a suffix range has no length"))
	}
	rc, info, err := s.d.ReadRange(ctx, key, r, opts)
	if err != nil {
		return nil, info, s.wrap("read", key, err)
	}
	return &wrappedReader{rc: rc, s: s, key: key}, info, nil
}

// ReadAll reads a whole object.
func (s *Store) ReadAll(ctx context.Context, key string) ([]byte, error) {
	rc, info, err := s.ReadRange(ctx, key, All(), ReadOptions{})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := bytes.NewBuffer(make([]byte, 0, info.Size))
	_, err = buf.ReadFrom(rc)
	return buf.Bytes(), err
}

// Writer is an object being written. Nothing is visible until Close returns
// nil; Abort (or a cancelled context) leaves nothing behind.
type Writer struct {
	w   DriverWriter
	s   *Store
	key string
	n   int64
}

// NewWriter starts writing key. Large objects go up as multipart uploads.
func (s *Store) NewWriter(ctx context.Context, key string, opts WriteOptions) (*Writer, error) {
	if err := checkKey(key, false); err != nil {
		return nil, s.invalid("write", key, err)
	}
	w, err := s.d.NewWriter(ctx, key, opts)
	if err != nil {
		return nil, s.wrap("write", key, err)
	}
	return &Writer{w: w, s: s, key: key}, nil
}

func (w *Writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, w.s.wrap("write", w.key, err)
}

// Written is the number of bytes accepted so far.
func (w *Writer) Written() int64 { return w.n }

// Close commits the object.
func (w *Writer) Close() error { return w.s.wrap("write", w.key, w.w.Close()) }

// Abort discards the object.
func (w *Writer) Abort() error { return w.s.wrap("write", w.key, w.w.Abort()) }

// Put writes a whole object from r.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, opts WriteOptions) (int64, error) {
	w, err := s.NewWriter(ctx, key, opts)
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(w, r); err != nil {
		_ = w.Abort()
		return w.Written(), err
	}
	return w.Written(), w.Close()
}

// Delete removes an object.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := checkKey(key, false); err != nil {
		return s.invalid("delete", key, err)
	}
	return s.wrap("delete", key, s.d.Delete(ctx, key))
}

// BucketMaker is a driver that can create the bucket it was opened on.
type BucketMaker interface {
	MakeBucket(ctx context.Context) error
}

// MakeBucket creates the store's bucket. Only S3 stores have buckets to
// make; a directory or an in-memory store needs none.
func (s *Store) MakeBucket(ctx context.Context) error {
	bm, ok := s.d.(BucketMaker)
	if !ok {
		return s.invalid("make bucket", "", errors.New("only s3:// stores have buckets to make"))
	}
	return s.wrap("make bucket", "", bm.MakeBucket(ctx))
}

// Close releases the driver.
func (s *Store) Close() error { return s.d.Close() }

type wrappedReader struct {
	rc  io.ReadCloser
	s   *Store
	key string
}

func (r *wrappedReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if err != nil && err != io.EOF {
		err = r.s.wrap("read", r.key, err)
	}
	return n, err
}

func (r *wrappedReader) Close() error { return r.rc.Close() }

// Join joins a prefix and a name with exactly one slash.
func Join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return strings.TrimSuffix(prefix, "/") + "/" + strings.TrimPrefix(name, "/")
}

// Base is the last element of a key.
func Base(key string) string { return path.Base(key) }
