// Package s3server is an embedded S3 endpoint: it serves a directory over
// the S3 protocol, so that the s3:// driver, the AWS CLI or any S3 client
// can be tested and demonstrated without a cloud account or a MinIO
// binary. It is what `sluice server` runs.
//
// Each top-level subdirectory of the served directory is a bucket; every
// regular file below it is an object, its key the slash-separated path.
// Files put there by other means are served too. Nothing outside the
// directory is ever read, listed, hashed, written or deleted: every path
// is resolved through an os.Root, so "..", absolute keys and symbolic
// links that point out of the directory name no object (links that stay
// inside are followed).
//
// Only the operations listed below are served; any other (ACLs, policies,
// tagging, object lock, versioning, lifecycle, CORS, website, browser POST
// uploads, select, restore, ...: any query parameter it does not know) is
// answered 501 NotImplemented before the body is read, and changes
// nothing.
//
// The S3 protocol comes from gofakes3; this package adds a backend over
// the directory and the checks gofakes3 lacks. What clients get:
//
//   - ListObjectsV2 (and V1) with prefix, delimiter and pagination, in S3
//     key order; HEAD; GET with single ranges (suffix ranges longer than
//     the object return all of it, a start at or past the end is 416
//     InvalidRange); PUT; DELETE and multi-object delete; copy; multipart
//     upload (create, upload part, list parts and uploads, complete,
//     abort), parts kept on disk and at least 5 MiB except the last, as S3
//     requires.
//   - Atomic writes: an object is written to a temporary file and renamed
//     into place, so readers never see a partial object and a failed or
//     aborted upload leaves nothing behind.
//   - ETags are the MD5 of the content, for multipart objects too (S3 gives
//     those "<md5 of part md5s>-<n>"); they are computed on first use for
//     files the server did not write (so the first listing of a large
//     directory reads all of it) and cached in memory per file version.
//   - If-Match on GET and HEAD (gofakes3 ignores it): a mismatch is 412
//     PreconditionFailed, checked against the very file being sent.
//     If-None-Match, and If-Match / If-None-Match on PUT, come from gofakes3.
//   - Authentication: gofakes3 verifies no signatures at all. This package
//     does: every request must carry a valid AWS Signature Version 4 made
//     with the server's key pair (Authorization header or presigned URL;
//     any region; clock skew up to 15 minutes), or it is refused with 403
//     InvalidAccessKeyId, SignatureDoesNotMatch or AccessDenied. Signed
//     payload hashes are checked against the body; aws-chunked streaming
//     uploads are decoded and their chunk signatures checked
//     (STREAMING-AWS4-HMAC-SHA256-PAYLOAD; STREAMING-UNSIGNED-PAYLOAD-TRAILER
//     is decoded but its trailing checksum is not verified). There is one
//     key pair and no policies: a signed request may do anything.
//
// What it is not: a production object store. There is no TLS (it binds to
// loopback by default), no versioning, no object metadata beyond size,
// ETag and modification time (Content-Type is always
// application/octet-stream; user metadata is dropped), and multipart
// uploads in progress do not survive a restart. Keys must be valid file
// paths: no empty, "." or ".." segments, no trailing "/", and "a" cannot be
// an object while "a/b" is. Virtual-host addressing is not supported; use
// path-style (the s3:// driver does so for any custom endpoint). The
// server keeps its temporary files in DIR/.s3server, which it empties at
// start.
package s3server
