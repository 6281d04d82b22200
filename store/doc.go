// Package store is sluice's one small interface over object storage: list a
// prefix, stat, read a byte range, write (multipart for large objects,
// visible only once committed), delete.
//
// Users get the concrete *Store; backends implement the thin Driver
// interface and are chosen by URL scheme in Open: s3:// (any S3-compatible
// endpoint), file:// and plain paths, and mem://. Validation, error
// wrapping and classification (Kind, and sentinels for errors.Is) live once
// here, not in each driver. Every driver passes the conformance suite in
// store/storetest.
//
// It is not a cache, a scheduler or a retry layer: one call is one request.
// Coalescing, concurrency, retries and version pinning across many ranges
// belong to package fetch above it.
package store
