package store

import (
	"context"
	"io"
	"time"
)

// ObjectInfo describes one object. ETag is opaque; it changes whenever the
// object's bytes change, which is what lets readers pin a version.
type ObjectInfo struct {
	Key     string
	Size    int64
	ETag    string
	ModTime time.Time
}

// Range selects bytes of an object. Off >= 0 with Len >= 0 is [Off, Off+Len);
// Len < 0 reads to the end; Off < 0 is a suffix read of the last -Off bytes,
// which lets a Parquet footer come back in one request without knowing the size.
type Range struct {
	Off, Len int64
}

// All is the whole object.
func All() Range { return Range{Off: 0, Len: -1} }

// Suffix is the last n bytes of an object (all of it if it is shorter).
func Suffix(n int64) Range { return Range{Off: -n, Len: -1} }

// ReadOptions qualify a read.
type ReadOptions struct {
	// IfMatch, when set, makes the read fail with ErrPrecondition if the
	// object's ETag differs, so ranges of one object never mix versions.
	IfMatch string
}

// WriteOptions qualify a write.
type WriteOptions struct {
	// PartSize is the multipart part size; objects smaller than one part
	// are written in a single request. Zero means the driver default.
	PartSize int64
	// Concurrency is how many parts upload at once. Zero adapts: a
	// driver starts with a few and adds one while the writer waits for a
	// free slot and each addition raises the rate parts complete at, up
	// to what Memory allows.
	Concurrency int
	// Memory, when above zero, bounds what a writer buffers: the parts in
	// flight and the one filling. Zero: a driver's default (the S3
	// driver's is MaxPartConcurrency parts in flight at most).
	Memory int64
	// Size is the object's expected length in bytes, when known (zero:
	// unknown). A driver with a part-count limit uses it to pick a part
	// size large enough for the whole object; it is a hint, not a check.
	Size int64
	// Retry, when set, runs each request of the write (a single PUT; a
	// multipart upload's create, each part and the complete; a link
	// model's round trip before a local write), trying it again as it sees
	// fit (internal/retry's Policy.Do fits): the caller's one retry policy
	// then covers every request, and the driver's own retries of parts are
	// off. A request fails the write only once Retry gives up on it. Unset,
	// a driver retries parts itself, since no caller could retry just one,
	// and sends every other request once.
	Retry func(ctx context.Context, try func() error) error
	// Stored, when set, hears of bytes as the store takes them for good
	// (what a progress display should count, not bytes merely buffered):
	// a multipart upload's part once it is uploaded, a single-request
	// object once it is written, a local driver's bytes as written. It
	// may be called from other goroutines, never after Close or Abort
	// returns.
	Stored func(n int64)
	// Send, when set, is called by a driver that sends the object in
	// requests of its own (a RequestWriter: S3's single PUT, and each
	// create, part and complete of a multipart upload) before each
	// request, with the bytes it carries. A link model (package sim)
	// waits there the request's first-byte latency and may fail it, as a
	// server would (the request is then not sent: the error is the
	// request's). done is called once the request was answered, and
	// returns once the modelled transfer of those bytes has ended too.
	Send func(ctx context.Context, n int64) (done func() error, err error)
}

// RequestWriter is a DriverWriter that calls WriteOptions.Send before
// every request that carries its bytes: a wrapper that models a link
// (package sim) paces those requests, each a stream of its own, instead
// of the writer's Write calls.
type RequestWriter interface {
	DriverWriter
	SendsRequests() bool
}

// Driver is what a backend implements. The portable Store type validates
// arguments, wraps errors and classifies them once; drivers stay thin.
//
// All methods must be safe for concurrent use.
type Driver interface {
	// List calls fn for every object whose key starts with prefix, in
	// lexical key order. A non-nil error from fn stops the listing and is returned.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Stat describes one object.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// ReadRange opens the bytes of r. The returned info has the object's
	// full size and ETag (not the range length). A range starting at or past
	// the end yields an empty body, not an error.
	ReadRange(ctx context.Context, key string, r Range, opts ReadOptions) (io.ReadCloser, ObjectInfo, error)
	// NewWriter starts writing an object. Nothing is visible under key
	// until Close returns nil; Abort, a failed Close or a cancelled ctx
	// leave nothing behind.
	NewWriter(ctx context.Context, key string, opts WriteOptions) (DriverWriter, error)
	// Delete removes an object. Deleting a missing object is ErrNotFound.
	Delete(ctx context.Context, key string) error
	// Classify maps a driver error to a Kind.
	Classify(err error) Kind
	// Close releases the driver's resources.
	Close() error
}

// DriverWriter is an object being written.
type DriverWriter interface {
	io.Writer
	// Close commits the object.
	Close() error
	// Abort discards everything written; it is safe after Close.
	Abort() error
}
