// Package s3server is an embedded S3 endpoint: it serves a directory over
// the S3 protocol, so that the s3:// driver, the AWS CLI or any S3 client
// can be tested and demonstrated without a cloud account or a MinIO
// binary. It is what `sluice serve-s3` runs.
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
// uploads, select, restore, object attributes, ...: any query parameter
// it does not know, and the headers that ask for those features) is
// answered 501 NotImplemented before the body is read, and changes
// nothing.
//
// Every operation is served by this package over a backend on the
// directory (gofakes3 lends it bucket-name rules and a few types). What
// clients get:
//
//   - ListBuckets and ListObjectsV2 (and V1) with prefix, delimiter,
//     pagination and url encoding, in S3 key order; HEAD; GET with a range or a part number (a list of
//     ranges or an unparsable one gets the whole object, as from S3; a
//     start at or past the end is 416 InvalidRange); PUT; DELETE and
//     multi-object delete; copy, with the metadata directive and the
//     copy-source conditions; multipart upload (create, upload part,
//     upload part copy, list parts and uploads, complete, abort), parts
//     kept on disk and at least 5 MiB except the last (EntityTooSmall);
//     a repeated Complete answers as the first did. Bucket creation (no
//     location constraint but the server's region), deletion, HEAD (with
//     x-amz-bucket-region) and location.
//   - Atomic writes: an object is written to a temporary file and renamed
//     into place, so readers never see a partial object and a failed or
//     aborted upload leaves nothing behind.
//   - Metadata: Content-Type (binary/octet-stream when none was given),
//     Content-Disposition, Content-Encoding, Content-Language,
//     Cache-Control, Expires, x-amz-website-redirect-location and
//     x-amz-meta-* are stored with the object
//     in an extended attribute of its file (set before the rename, so they
//     move with the bytes) and returned by GET and HEAD. A file changed by
//     other means afterwards loses them; a file system without user
//     extended attributes keeps none.
//   - ETags: the MD5 of the content, and "<md5 of the part md5s>-<n>" for
//     multipart objects, as from S3. Those of files the server did not
//     write are computed on first use (so the first listing of a large
//     directory reads all of it) and cached in memory per file version.
//   - Checksums (x-amz-checksum-*: CRC32, CRC32C, CRC64NVME, MD5, SHA1,
//     SHA256, SHA512, XXHASH64, XXHASH3, XXHASH128), sent in a header or
//     an aws-chunked trailer, and Content-MD5: verified against the body
//     (400 BadDigest, nothing stored), stored, and returned with
//     x-amz-checksum-mode: ENABLED. Multipart uploads keep a COMPOSITE or
//     FULL_OBJECT checksum as created.
//   - Conditions: If-Match, If-None-Match, If-Modified-Since and
//     If-Unmodified-Since on GET and HEAD, checked against the very file
//     being sent; If-Match and If-None-Match on PUT.
//   - Authentication: every request must be signed with the server's key
//     pair, with AWS Signature Version 4 for the server's region
//     (Authorization header or presigned URL; clock skew up to 15
//     minutes; re-signed with aws-sdk-go-v2's signer to compare) or
//     Version 2 (what `aws s3 presign` and boto3 make by default), or it
//     is refused as S3 refuses it. A request signed for another region is
//     400 AuthorizationHeaderMalformed naming the server's region, so
//     clients that discover regions (the AWS SDKs and CLI, sluice's s3://
//     driver) follow it. Every x-amz- header must be signed. Signed
//     payload hashes are checked against the body; aws-chunked streaming
//     uploads are decoded and their chunk and trailer signatures checked
//     (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER],
//     STREAMING-UNSIGNED-PAYLOAD-TRAILER). There is one key pair and no
//     policies: a signed request may do anything.
//   - Limits against slow or hostile clients (see Options): a header
//     timeout; an idle timeout for request bodies, responses and
//     keep-alive; a minimum pace for request bodies after a grace (a body
//     of n bytes has the grace plus n/rate to arrive), a body too slow
//     answered 400 RequestTimeout and one cut short 400 IncompleteBody,
//     as by S3; a header size limit; a bound on open connections and a
//     smaller one for each client (an IPv4 address, an IPv6 /64), so that
//     one client holding connections it never uses leaves room for the
//     others. A request refused before its body is read closes the
//     connection rather than wait for the body.
//   - TLS (HTTPS, HTTP/1.1 only), with a given certificate (Options.TLS)
//     or one Start makes for the listen address, 127.0.0.1 and localhost,
//     signed by a CA it makes for it and writes to Server.CAFile for
//     clients to trust (AWS_CA_BUNDLE; Options.SelfSignedTLS).
//   - Metrics, given a Prometheus registry (Options.Metrics): requests by
//     operation and status code, their latency, body bytes each way,
//     requests in flight (docs/metrics.md names them).
//
// What it is not: a production object store. It binds to loopback by
// default; there is no versioning, and multipart uploads in progress
// do not survive a restart. Keys must be valid file paths: no empty, "."
// or ".." segments, and "a" cannot be an object while "a/b" is. A key
// ending in "/" (a "directory object") is the directory itself, with its
// metadata in an extended attribute; it must be empty. Virtual-host addressing is not
// supported; use path-style (the s3:// driver does so for any custom
// endpoint). The server keeps its temporary files in DIR/.s3server, which
// it empties at start.
package s3server
