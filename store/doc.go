// Package store is sluice's one small interface over object storage: list a
// prefix, stat, read a byte range, write (multipart for large objects,
// visible only once committed), delete.
//
// Users get the concrete *Store; backends implement the thin Driver
// interface and are chosen by URL scheme in Open: s3:// (any S3-compatible
// endpoint), file:// and plain paths, mem://, http(s):// (read-only
// objects on a web server), and gs:// and az:// where packages store/gcs
// and store/azure are imported (RegisterScheme). Validation, error wrapping and classification
// (Kind, and sentinels for errors.Is) live once here, not in each driver.
// Every driver passes the conformance suite in store/storetest (the HTTP
// driver its reads, over objects a directory driver writes).
//
// It is not a cache, a scheduler or a retry layer. Retries belong above it,
// to internal/retry's one policy (fetch, scan, bench and the CLI use it);
// a caller that retries opens the store with Options.Attempts 1, so that
// one call is one request (the default keeps the S3 SDK's 3 attempts, for
// callers that do not retry). The exception is an answer that names the
// bucket's region: the request goes once more, to that region.
// Coalescing, concurrency and version pinning across many ranges belong to
// package fetch above it.
package store
