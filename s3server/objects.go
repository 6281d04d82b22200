package s3server

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/johannesboyne/gofakes3"
)

// The object data path (GET, HEAD, PUT, copy, upload part and part copy,
// complete) is served here rather than by gofakes3, whose handlers keep
// no metadata, verify no checksum, know no part numbers and can only
// report an ETag that is an MD5; buckets.go and listing.go serve the
// rest. gofakes3 routes nothing.

// s3Error is an S3 error answer.
type s3Error struct {
	status    int
	code, msg string
}

func (e *s3Error) Error() string                 { return e.code + ": " + e.msg }
func (e *s3Error) ErrorCode() gofakes3.ErrorCode { return gofakes3.ErrorCode(e.code) }

var (
	errPreconditionFailed = &s3Error{http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold."}
	errMissingLength      = &s3Error{http.StatusLengthRequired, "MissingContentLength", "You must provide the Content-Length HTTP header."}
	errTooLarge           = &s3Error{http.StatusBadRequest, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed object size."}
)

// maxObjectSize is S3's limit for one PUT (and one part).
const maxObjectSize = 5 << 30

// answer writes err the way S3 does.
func answer(w http.ResponseWriter, r *http.Request, err error) {
	var se *s3Error
	var ae *authError
	var ge gofakes3.Error
	switch {
	case errors.As(err, &se):
		writeError(w, r, se.status, se.code, se.msg)
	case errors.As(err, &ae):
		writeError(w, r, ae.status, ae.code, ae.msg, ae.fields...)
	case errors.As(err, &ge):
		code := string(ge.ErrorCode())
		msg, ok := s3Messages[code]
		if !ok {
			msg = err.Error()
		}
		writeError(w, r, ge.ErrorCode().Status(), code, msg)
	default:
		writeError(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	}
}

// s3Messages are S3's wording of the errors gofakes3's types stand for.
var s3Messages = map[string]string{
	"NoSuchBucket":   "The specified bucket does not exist.",
	"NoSuchKey":      "The specified key does not exist.",
	"NoSuchUpload":   "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
	"BucketNotEmpty": "The bucket you tried to delete is not empty.",
	"InvalidPart":    "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
}

func splitPath(p string) (bucket, key string) {
	bucket, key, _ = strings.Cut(strings.TrimPrefix(p, "/"), "/")
	return bucket, key
}

// handler routes every implemented operation to its handler.
func (b *dirBackend) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _ := match(r)
		bucket, key := splitPath(r.URL.Path)
		copySrc := r.Header.Get("X-Amz-Copy-Source")
		var err error
		switch {
		case name == "GetObject" || name == "HeadObject":
			err = b.getObject(w, r, bucket, key)
		case name == "GetObjectAttributes":
			err = b.getAttributes(w, r, bucket, key)
		case name == "ListObjects":
			err = b.listObjects(w, r, bucket)
		case name == "ListBuckets":
			err = b.listBuckets(w, r)
		case name == "DeleteObjects":
			err = b.deleteObjects(w, r, bucket)
		case name == "DeleteObject":
			err = b.deletePlain(w, r, bucket, key)
		case name == "PutObject" && copySrc != "":
			err = b.copyObject(w, r, bucket, key, copySrc)
		case name == "PutObject":
			err = b.putObject(w, r, bucket, key)
		case name == "UploadPart":
			err = b.uploadPart(w, r, bucket, key, copySrc)
		case name == "CompleteMultipartUpload":
			err = b.completeUpload(w, r, bucket, key)
		case name == "CreateMultipartUpload":
			err = b.createUpload(w, r, bucket, key)
		case name == "AbortMultipartUpload":
			err = b.abortUpload(w, r, bucket, key)
		case name == "ListParts":
			err = b.listParts(w, r, bucket, key)
		case name == "ListMultipartUploads":
			err = b.listUploads(w, r, bucket)
		case name == "HeadBucket":
			err = b.headBucket(w, bucket)
		case name == "CreateBucket":
			err = b.createBucket(w, r, bucket)
		case name == "DeleteBucket":
			err = b.deleteBucket(w, bucket)
		case name == "GetBucketLocation":
			err = b.bucketLocation(w, bucket)
		default:
			// onlyImplemented lets through only the operations above.
			err = &s3Error{http.StatusNotImplemented, "NotImplemented", "operation " + name + " is not implemented by this server"}
		}
		if err != nil {
			answer(w, r, err)
		}
	})
}

func httpTime(t time.Time) string { return t.UTC().Format(http.TimeFormat) }

// conditions evaluates If-Match, If-Unmodified-Since, If-None-Match and
// If-Modified-Since against an object, as S3 does for GET and HEAD (and,
// with the x-amz-copy-source- prefix, for the source of a copy, where
// every failure is 412).
func conditions(h http.Header, prefix, etag string, mtime time.Time, copySource bool) (notModified bool, err error) {
	mtime = mtime.Truncate(time.Second)
	since := func(name string) (time.Time, bool) {
		t, err := http.ParseTime(h.Get(prefix + name))
		return t, err == nil
	}
	if im := h.Get(prefix + "If-Match"); im != "" {
		if !etagMatches(im, etag) {
			return false, errPreconditionFailed
		}
	} else if t, ok := since("If-Unmodified-Since"); ok && mtime.After(t) {
		return false, errPreconditionFailed
	}
	if inm := h.Get(prefix + "If-None-Match"); inm != "" {
		if etagMatches(inm, etag) {
			notModified = true
		}
	} else if t, ok := since("If-Modified-Since"); ok && !mtime.After(t) {
		notModified = true
	}
	if notModified && copySource {
		return false, errPreconditionFailed
	}
	return notModified, nil
}

// parseRange reads a Range header against an object of size bytes. S3
// serves the whole object for a header it cannot parse or a list of
// ranges (ok false), and answers 416 for a range that starts past the end.
func parseRange(s string, size int64) (start, length int64, ok bool, err error) {
	spec, found := strings.CutPrefix(s, "bytes=")
	if !found || strings.Contains(spec, ",") {
		return 0, 0, false, nil
	}
	first, last, found := strings.Cut(spec, "-")
	if !found {
		return 0, 0, false, nil
	}
	invalid := &s3Error{http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable"}
	if first == "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false, nil
		}
		if n == 0 {
			return 0, 0, false, invalid
		}
		if size == 0 {
			return 0, 0, false, nil // the last n bytes of nothing: all of it
		}
		n = min(n, size)
		return size - n, n, true, nil
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 {
		return 0, 0, false, nil
	}
	end := size - 1
	if last != "" {
		e, err := strconv.ParseInt(last, 10, 64)
		if err != nil || e < a {
			return 0, 0, false, nil
		}
		end = min(e, size-1)
	}
	if a >= size { // an empty object has no byte to start at
		return 0, 0, false, invalid
	}
	return a, end - a + 1, true, nil
}

var errPartNumber = &s3Error{http.StatusBadRequest, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive."}

func (b *dirBackend) getObject(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	if pn := r.URL.Query().Get("partNumber"); pn != "" {
		if n, err := strconv.Atoi(pn); err != nil || n < 1 || n > gofakes3.MaxUploadPartNumber {
			return errPartNumber
		}
	}
	f, fi, etag, m, err := b.openObject(bucket, key)
	if err != nil {
		return err
	}
	defer f.Close()
	size := fi.Size()
	h := w.Header()
	notModified, err := conditions(r.Header, "", etag, fi.ModTime(), false)
	if err != nil {
		return err
	}
	if notModified {
		h.Set("ETag", etag)
		h.Set("Last-Modified", httpTime(fi.ModTime()))
		w.WriteHeader(http.StatusNotModified)
		return nil
	}

	q := r.URL.Query()
	start, length, partial := int64(0), size, false
	if pn := q.Get("partNumber"); pn != "" {
		if r.Header.Get("Range") != "" {
			return &s3Error{http.StatusBadRequest, "InvalidRequest", "Cannot specify both Range header and partNumber query parameter"}
		}
		n, _ := strconv.Atoi(pn)
		parts := []int64{size}
		if m != nil && len(m.Parts) > 0 {
			parts = m.Parts
			h.Set("X-Amz-Mp-Parts-Count", strconv.Itoa(len(parts)))
		}
		if n > len(parts) {
			return &s3Error{http.StatusRequestedRangeNotSatisfiable, "InvalidPartNumber", "The requested partnumber is not satisfiable."}
		}
		for _, p := range parts[:n-1] {
			start += p
		}
		length, partial = parts[n-1], size > 0
	} else if rng := r.Header.Get("Range"); rng != "" {
		s, l, ok, err := parseRange(rng, size)
		if err != nil {
			h.Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			return err
		}
		if ok {
			start, length, partial = s, l, true
		}
	}

	h.Set("ETag", etag)
	h.Set("Last-Modified", httpTime(fi.ModTime()))
	h.Set("Accept-Ranges", "bytes")
	h.Set("X-Amz-Storage-Class", "STANDARD")
	h.Set("Content-Type", "binary/octet-stream") // S3's, for an object stored without one
	if isDirKey(key) {
		h.Set("Content-Type", "application/x-directory")
	}
	if m != nil {
		for k, v := range m.Headers {
			if strings.HasPrefix(k, "x-amz-meta-") {
				// As S3 sends them: lower case, as stored. Set would
				// canonicalise them, and clients that keep header names
				// as sent (boto3) would see "X-Amz-Meta-Mixedcase".
				h[k] = []string{v}
				continue
			}
			h.Set(k, v)
		}
		if m.Checksum != "" && strings.EqualFold(r.Header.Get("X-Amz-Checksum-Mode"), "ENABLED") &&
			(!partial || q.Has("partNumber") && len(m.Parts) == 0) {
			h.Set("X-Amz-Checksum-"+m.ChecksumAlgo, m.Checksum)
			h.Set("X-Amz-Checksum-Type", m.ChecksumType)
		}
	}
	for _, o := range []string{"Content-Type", "Content-Language", "Expires", "Cache-Control", "Content-Disposition", "Content-Encoding"} {
		if v := q.Get("response-" + strings.ToLower(o)); v != "" {
			h.Set(o, v)
		}
	}
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	status := http.StatusOK
	if partial {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, start+length-1, size))
		status = http.StatusPartialContent
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead || length == 0 {
		return nil
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil // the status is sent; the short body tells the client
	}
	// An *io.LimitedReader over the *os.File goes out with sendfile(2).
	io.Copy(w, &io.LimitedReader{R: f, N: length})
	return nil
}

// sums is what a write computed over the bytes it stored.
type sums struct {
	md5      []byte
	checksum []byte // of the requested algorithm, if any
}

// receive copies a body of size bytes into a new temporary file in dir,
// computing its MD5 and, if algo is set, its checksum. On error nothing is
// left behind.
func (b *dirBackend) receive(dir string, body io.Reader, size int64, algo string) (string, sums, error) {
	var extra []hash.Hash
	var ck hash.Hash
	if algo != "" {
		ck = newChecksum(algo)
		extra = append(extra, ck)
	}
	tmp, md5sum, err := b.writeTemp(dir, body, size, extra...)
	if err != nil {
		return "", sums{}, err
	}
	s := sums{md5: md5sum}
	if ck != nil {
		s.checksum = ck.Sum(nil)
	}
	return tmp, s, nil
}

// verifyBody checks what a write received against what the client said
// it sent: Content-MD5 and the flexible checksum.
func verifyBody(r *http.Request, s sums, ck *checksumReq) (checksum string, err error) {
	if v := r.Header.Get("Content-MD5"); v != "" {
		want, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(want) != 16 {
			return "", errInvalidDigest(v)
		}
		if string(want) != string(s.md5) {
			return "", &authError{status: http.StatusBadRequest, code: "BadDigest", msg: "The Content-MD5 you specified did not match what we received.",
				fields: []string{"ExpectedDigest", hex.EncodeToString(want), "CalculatedDigest", base64.StdEncoding.EncodeToString(s.md5)}}
		}
	}
	if ck == nil {
		return "", nil
	}
	return ck.check(r, s.checksum)
}

func errInvalidDigest(v string) error {
	return &authError{status: http.StatusBadRequest, code: "InvalidDigest", msg: "The Content-Md5 you specified is not valid.", fields: []string{"Content-MD5", v}}
}

func contentMD5Valid(r *http.Request) error {
	if _, ok := r.Header["Content-Md5"]; ok {
		v, err := base64.StdEncoding.DecodeString(r.Header.Get("Content-MD5"))
		if err != nil || len(v) != 16 {
			return errInvalidDigest(r.Header.Get("Content-MD5"))
		}
	}
	return nil
}

func (b *dirBackend) putObject(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	dst, err := b.objectPath(bucket, key)
	if err != nil {
		return err
	}
	if r.ContentLength < 0 {
		return errMissingLength
	}
	if r.ContentLength > maxObjectSize {
		return errTooLarge
	}
	hdrs, err := headersOf(r.Header)
	if err != nil {
		return err
	}
	ck, err := checksumOf(r)
	if err != nil {
		return err
	}
	if err := contentMD5Valid(r); err != nil {
		return err
	}
	// Without a checksum asked for, S3 keeps a CRC64NVME of every object.
	algo := defaultChecksum
	if ck != nil {
		algo = ck.algo
	}
	if isDirKey(key) && r.ContentLength != 0 {
		return errDirObjectBody
	}
	tmp, s, err := b.receive(b.tmp, r.Body, r.ContentLength, algo)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // after a successful commit, there is nothing left to remove
	checksum, err := verifyBody(r, s, ck)
	if err != nil {
		return err
	}
	if ck == nil {
		checksum = base64.StdEncoding.EncodeToString(s.checksum)
	}
	m := &objMeta{ETag: quoteETag(s.md5), Headers: hdrs, ChecksumAlgo: algo, Checksum: checksum, ChecksumType: "FULL_OBJECT"}
	if isDirKey(key) {
		err = b.putDirObject(dst, key, m, putConditions(r.Header))
	} else if err = writeMeta(tmp, m); err == nil {
		err = b.commit(tmp, dst, key, m.ETag, putConditions(r.Header))
	}
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("ETag", m.ETag)
	h.Set("X-Amz-Checksum-"+algo, checksum)
	h.Set("X-Amz-Checksum-Type", "FULL_OBJECT")
	h.Set("X-Amz-Object-Size", strconv.FormatInt(r.ContentLength, 10))
	w.WriteHeader(http.StatusOK)
	return nil
}

func quoteETag(md5sum []byte) string { return `"` + hex.EncodeToString(md5sum) + `"` }

// putConditions checks a conditional PUT (If-Match, If-None-Match: *)
// against the object it would replace.
func putConditions(h http.Header) func(exists bool, etag string) error {
	im, inm := h.Get("If-Match"), h.Get("If-None-Match")
	if im == "" && inm == "" {
		return nil
	}
	return func(exists bool, etag string) error {
		if im != "" && (!exists || !etagMatches(im, etag)) {
			if !exists {
				return gofakes3.KeyNotFound("")
			}
			return errPreconditionFailed
		}
		if inm != "" && exists && etagMatches(inm, etag) {
			return errPreconditionFailed
		}
		return nil
	}
}

// copySource parses x-amz-copy-source: "[/]bucket/key[?versionId=null]",
// the key percent-encoded.
func copySource(s string) (bucket, key string, err error) {
	arg := func(msg, v string) error { return invalidArg(msg, "x-amz-copy-source", v) }
	path, query, _ := strings.Cut(s, "?")
	if query != "" {
		v, err := url.ParseQuery(query)
		if err != nil {
			return "", "", arg("Invalid copy source encoding", s)
		}
		if id := v.Get("versionId"); id != "" && id != "null" {
			return "", "", &s3Error{http.StatusNotImplemented, "NotImplemented", "versioning is not implemented by this server"}
		}
	}
	path, err = url.PathUnescape(strings.TrimPrefix(path, "/"))
	if err != nil || !utf8.ValidString(path) {
		return "", "", arg("Invalid copy source encoding", s)
	}
	bucket, key, _ = strings.Cut(path, "/")
	if gofakes3.ValidateBucketName(bucket) != nil || net.ParseIP(bucket) != nil {
		return "", "", arg("Invalid copy source bucket name", path)
	}
	if key == "" || checkKey(key) != nil {
		return "", "", arg("Invalid copy source object key", key)
	}
	return bucket, key, nil
}

// openSource opens the source of a copy and checks its conditions.
func (b *dirBackend) openSource(r *http.Request, src string) (*os.File, os.FileInfo, string, *objMeta, string, string, error) {
	sb, sk, err := copySource(src)
	if err != nil {
		return nil, nil, "", nil, "", "", err
	}
	f, fi, etag, m, err := b.openObject(sb, sk)
	if err != nil {
		return nil, nil, "", nil, "", "", err
	}
	if _, err := conditions(r.Header, "X-Amz-Copy-Source-", etag, fi.ModTime(), true); err != nil {
		f.Close()
		return nil, nil, "", nil, "", "", err
	}
	return f, fi, etag, m, sb, sk, nil
}

type copyResult struct {
	XMLName      xml.Name
	ETag         string `xml:"ETag"`
	LastModified string `xml:"LastModified"`
	checksums
}

// checksums are the Checksum<ALGORITHM> elements of S3's answers.
type checksums struct {
	ChecksumCRC32     string `xml:"ChecksumCRC32,omitempty"`
	ChecksumCRC32C    string `xml:"ChecksumCRC32C,omitempty"`
	ChecksumCRC64NVME string `xml:"ChecksumCRC64NVME,omitempty"`
	ChecksumMD5       string `xml:"ChecksumMD5,omitempty"`
	ChecksumSHA1      string `xml:"ChecksumSHA1,omitempty"`
	ChecksumSHA256    string `xml:"ChecksumSHA256,omitempty"`
	ChecksumSHA512    string `xml:"ChecksumSHA512,omitempty"`
	ChecksumXXHASH64  string `xml:"ChecksumXXHASH64,omitempty"`
	ChecksumXXHASH3   string `xml:"ChecksumXXHASH3,omitempty"`
	ChecksumXXHASH128 string `xml:"ChecksumXXHASH128,omitempty"`
	ChecksumType      string `xml:"ChecksumType,omitempty"`
}

// field is the element of algo's checksum; nil for an unknown algorithm.
func (c *checksums) field(algo string) *string {
	switch algo {
	case "crc32":
		return &c.ChecksumCRC32
	case "crc32c":
		return &c.ChecksumCRC32C
	case "crc64nvme":
		return &c.ChecksumCRC64NVME
	case "md5":
		return &c.ChecksumMD5
	case "sha1":
		return &c.ChecksumSHA1
	case "sha256":
		return &c.ChecksumSHA256
	case "sha512":
		return &c.ChecksumSHA512
	case "xxhash64":
		return &c.ChecksumXXHASH64
	case "xxhash3":
		return &c.ChecksumXXHASH3
	case "xxhash128":
		return &c.ChecksumXXHASH128
	}
	return nil
}

func (c *checksums) setChecksum(algo, v string) {
	if f := c.field(algo); f != nil {
		*f = v
	}
}

func writeXML(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, xml.Header)
	xml.NewEncoder(w).Encode(v)
}

func (b *dirBackend) copyObject(w http.ResponseWriter, r *http.Request, bucket, key, src string) error {
	dst, err := b.objectPath(bucket, key)
	if err != nil {
		return err
	}
	directive := strings.ToUpper(r.Header.Get("X-Amz-Metadata-Directive"))
	if directive != "" && directive != "COPY" && directive != "REPLACE" {
		return &s3Error{http.StatusBadRequest, "InvalidArgument", "Unknown metadata directive."}
	}
	algo := strings.ToLower(r.Header.Get("X-Amz-Checksum-Algorithm"))
	if algo != "" && newChecksum(algo) == nil {
		return errUnknownAlgo
	}
	// Sent metadata is checked even when the directive drops it, as S3 does.
	if _, err := headersOf(r.Header); err != nil {
		return err
	}
	f, fi, _, sm, sb, sk, err := b.openSource(r, src)
	if err != nil {
		return err
	}
	defer f.Close()
	if sb == bucket && sk == key && directive != "REPLACE" && (algo == "" || sm != nil && sm.ChecksumAlgo == algo) {
		return &s3Error{http.StatusBadRequest, "InvalidRequest", "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes."}
	}
	m := &objMeta{}
	if directive == "REPLACE" {
		if m.Headers, err = headersOf(r.Header); err != nil {
			return err
		}
	} else if sm != nil {
		// The website redirect is the one stored header S3 does not copy.
		m.Headers = map[string]string{}
		for k, v := range sm.Headers {
			if k != "X-Amz-Website-Redirect-Location" {
				m.Headers[k] = v
			}
		}
		if v := r.Header.Get("X-Amz-Website-Redirect-Location"); v != "" {
			m.Headers["X-Amz-Website-Redirect-Location"] = v
		}
	}
	if algo == "" && sm != nil && sm.ChecksumType == "FULL_OBJECT" {
		algo = sm.ChecksumAlgo // the copy keeps its checksum
	}
	if algo == "" {
		algo = defaultChecksum
	}
	if isDirKey(key) && fi.Size() != 0 {
		return errDirObjectBody
	}
	tmp, s, err := b.receive(b.tmp, io.NewSectionReader(f, 0, fi.Size()), fi.Size(), algo)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	m.ETag = quoteETag(s.md5)
	if algo != "" {
		m.ChecksumAlgo, m.Checksum, m.ChecksumType = algo, base64.StdEncoding.EncodeToString(s.checksum), "FULL_OBJECT"
	}
	if isDirKey(key) {
		err = b.putDirObject(dst, key, m, nil)
	} else if err = writeMeta(tmp, m); err == nil {
		err = b.commit(tmp, dst, key, m.ETag, nil)
	}
	if err != nil {
		return err
	}
	res := &copyResult{XMLName: xml.Name{Local: "CopyObjectResult"}, ETag: m.ETag, LastModified: time.Now().UTC().Format(time.RFC3339)}
	res.setChecksum(m.ChecksumAlgo, m.Checksum)
	writeXML(w, res)
	return nil
}

func (b *dirBackend) uploadPart(w http.ResponseWriter, r *http.Request, bucket, key, src string) error {
	q := r.URL.Query()
	if _, err := b.bucketPath(bucket); err != nil {
		return err
	}
	num, err := strconv.Atoi(q.Get("partNumber"))
	if err != nil || num < 1 || num > gofakes3.MaxUploadPartNumber {
		return errPartNumber
	}
	if src != "" {
		// A malformed source is named before the upload is looked up.
		if _, _, err := copySource(src); err != nil {
			return err
		}
	}
	u, err := b.getUpload(bucket, key, gofakes3.UploadID(q.Get("uploadId")))
	if err != nil {
		return err
	}
	if src != "" {
		return b.uploadPartCopy(w, r, u, num, src)
	}
	if r.ContentLength < 0 {
		return errMissingLength
	}
	if r.ContentLength > maxObjectSize {
		return errTooLarge
	}
	ck, err := checksumOf(r)
	if err != nil {
		return err
	}
	// A composite checksum is made of the parts' own; a whole-object one
	// is computed at the end, so its parts may come without.
	if u.checksumAlgo != "" && (ck != nil && ck.algo != u.checksumAlgo || ck == nil && u.checksumType == "COMPOSITE") {
		got := "null"
		if ck != nil {
			got = strings.ToUpper(ck.algo)
		}
		return &s3Error{http.StatusBadRequest, "InvalidRequest", "Checksum Type mismatch occurred, expected checksum Type: " + strings.ToUpper(u.checksumAlgo) + ", actual checksum Type: " + got}
	}
	if err := contentMD5Valid(r); err != nil {
		return err
	}
	algo := u.checksumAlgo
	if ck != nil {
		algo = ck.algo
	}
	tmp, s, err := b.receive(u.dir, r.Body, r.ContentLength, algo)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	checksum, err := verifyBody(r, s, ck)
	if err != nil {
		return err
	}
	if ck == nil && algo != "" {
		checksum = base64.StdEncoding.EncodeToString(s.checksum)
	}
	etag := quoteETag(s.md5)
	if err := b.storePart(u, num, tmp, part{etag: etag, md5: s.md5, size: r.ContentLength, checksum: checksum}); err != nil {
		return err
	}
	w.Header().Set("ETag", etag)
	if checksum != "" {
		w.Header().Set("X-Amz-Checksum-"+algo, checksum)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

func (b *dirBackend) uploadPartCopy(w http.ResponseWriter, r *http.Request, u *upload, num int, src string) error {
	f, fi, _, _, _, _, err := b.openSource(r, src)
	if err != nil {
		return err
	}
	defer f.Close()
	start, length := int64(0), fi.Size()
	if rng := r.Header.Get("X-Amz-Copy-Source-Range"); rng != "" {
		bad := &s3Error{http.StatusBadRequest, "InvalidArgument", "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy"}
		spec, ok := strings.CutPrefix(rng, "bytes=")
		a, e, ok2 := strings.Cut(spec, "-")
		first, err1 := strconv.ParseInt(a, 10, 64)
		last, err2 := strconv.ParseInt(e, 10, 64)
		if !ok || !ok2 || err1 != nil || err2 != nil || first < 0 || last < first {
			return bad
		}
		if last >= fi.Size() {
			return &s3Error{http.StatusBadRequest, "InvalidArgument", fmt.Sprintf("Range specified is not valid for source object of size: %d", fi.Size())}
		}
		start, length = first, last-first+1
	}
	if length > maxObjectSize {
		return errTooLarge
	}
	tmp, s, err := b.receive(u.dir, io.NewSectionReader(f, start, length), length, u.checksumAlgo)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	p := part{etag: quoteETag(s.md5), md5: s.md5, size: length}
	if u.checksumAlgo != "" {
		p.checksum = base64.StdEncoding.EncodeToString(s.checksum)
	}
	if err := b.storePart(u, num, tmp, p); err != nil {
		return err
	}
	res := &copyResult{XMLName: xml.Name{Local: "CopyPartResult"}, ETag: p.etag, LastModified: time.Now().UTC().Format(time.RFC3339)}
	res.setChecksum(u.checksumAlgo, p.checksum)
	writeXML(w, res)
	return nil
}

type completeRequest struct {
	Parts []struct {
		PartNumber *int   `xml:"PartNumber"`
		ETag       string `xml:"ETag"`
		checksums
	} `xml:"Part"`
}

// checksum returns the part's checksum of algo, and the name of another
// algorithm it carries one of, if any.
func (c *checksums) checksum(algo string) (v, other string) {
	for _, a := range checksumAlgos {
		if val := *c.field(a); val != "" {
			if a == algo {
				v = val
			} else {
				other = a
			}
		}
	}
	return v, other
}

var errPartChecksum = &s3Error{http.StatusBadRequest, "InvalidArgument", "Invalid Base64 or multiple checksums present in request"}

type completeResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
	checksums
}

func (b *dirBackend) completeUpload(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	if _, err := b.bucketPath(bucket); err != nil {
		return err
	}
	var in completeRequest
	if err := xml.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&in); err != nil {
		return bodyError(r, &s3Error{http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema."})
	}
	id := gofakes3.UploadID(r.URL.Query().Get("uploadId"))
	u, err := b.getUpload(bucket, key, id)
	if err != nil && !errors.Is(err, gofakes3.ErrNoSuchUpload) {
		return err
	}
	// The checksum of the whole object the client expects, if it says.
	var final *checksumReq
	for _, a := range checksumAlgos {
		vs, ok := r.Header[http.CanonicalHeaderKey("X-Amz-Checksum-"+a)]
		if !ok {
			continue
		}
		v := vs[0]
		if final != nil {
			return &s3Error{http.StatusBadRequest, "InvalidRequest", "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed."}
		}
		// A composite checksum ends in "-<number of parts>".
		sum, n, composite := strings.Cut(v, "-")
		raw, err := base64.StdEncoding.DecodeString(sum)
		if count, cerr := strconv.Atoi(n); err != nil || len(raw) != newChecksum(a).Size() || composite && (cerr != nil || count < 1) {
			return &s3Error{http.StatusBadRequest, "InvalidRequest", "Value for x-amz-checksum-" + a + " header is invalid."}
		}
		final = &checksumReq{algo: a, want: v}
	}
	parts := make([]completedPart, len(in.Parts))
	for i, p := range in.Parts {
		if p.PartNumber == nil || p.ETag == "" {
			return &s3Error{http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema."}
		}
		if *p.PartNumber < 1 {
			return &s3Error{http.StatusBadRequest, "InvalidArgument", "PartNumber must be >= 1"}
		}
		parts[i] = completedPart{num: *p.PartNumber, etag: p.ETag}
		if u == nil || u.checksumAlgo == "" {
			continue
		}
		v, other := p.checksums.checksum(u.checksumAlgo)
		if other != "" {
			if v != "" {
				return errPartChecksum
			}
			return &s3Error{http.StatusBadRequest, "BadDigest", fmt.Sprintf("The %s you specified for part %d did not match what we received.", other, *p.PartNumber)}
		}
		if raw, err := base64.StdEncoding.DecodeString(v); v != "" && (err != nil || len(raw) != newChecksum(u.checksumAlgo).Size()) {
			return errPartChecksum
		}
		if v == "" && u.checksumType == "COMPOSITE" {
			return &s3Error{http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("The upload was created using a %s checksum. The complete request must include the checksum for each part. It was missing for part %d in the request.", u.checksumAlgo, *p.PartNumber)}
		}
		parts[i].checksum = v
	}
	if u != nil {
		t := r.Header.Get("X-Amz-Checksum-Type")
		if t != "" && !strings.EqualFold(t, "COMPOSITE") && !strings.EqualFold(t, "FULL_OBJECT") {
			return &s3Error{http.StatusBadRequest, "InvalidRequest", "Value for x-amz-checksum-type header is invalid."}
		}
		if t != "" && u.checksumAlgo != "" && !strings.EqualFold(t, u.checksumType) {
			return &s3Error{http.StatusBadRequest, "InvalidRequest", "The upload was created using the " + u.checksumType + " checksum mode. The complete request must use the same checksum mode."}
		}
	}
	var wantSize int64 = -1
	if v := r.Header.Get("X-Amz-Mp-Object-Size"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return &s3Error{http.StatusBadRequest, "InvalidRequest", "Value for x-amz-mp-object-size header is invalid."}
		}
		if n < 0 {
			return &s3Error{http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("Value for x-amz-mp-object-size header is less than zero: '%d'", n)}
		}
		wantSize = n
	}
	if final != nil && u != nil && final.algo != u.checksumAlgo {
		final = nil // S3 ignores a checksum of another algorithm than the upload's
	}
	m, err := b.complete(bucket, key, id, parts, wantSize, final, putConditions(r.Header))
	if err != nil {
		return err
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	res := &completeResult{
		Location: scheme + "://" + r.Host + "/" + bucket + "/" + key,
		Bucket:   bucket, Key: key, ETag: m.ETag,
	}
	if m.Checksum != "" {
		res.setChecksum(m.ChecksumAlgo, m.Checksum)
		res.ChecksumType = m.ChecksumType
	}
	writeXML(w, res)
	return nil
}

type initiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

func (b *dirBackend) createUpload(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	u, err := b.newUpload(bucket, key, r.Header)
	if err != nil {
		return err
	}
	if u.checksumAlgo != "" {
		w.Header().Set("X-Amz-Checksum-Algorithm", strings.ToUpper(u.checksumAlgo))
		w.Header().Set("X-Amz-Checksum-Type", u.checksumType)
	}
	writeXML(w, &initiateResult{Bucket: bucket, Key: key, UploadID: string(u.id)})
	return nil
}

type attributesResult struct {
	XMLName      xml.Name     `xml:"GetObjectAttributesResponse"`
	ETag         string       `xml:"ETag,omitempty"`
	Checksum     *checksums   `xml:"Checksum,omitempty"`
	ObjectParts  *objectParts `xml:"ObjectParts,omitempty"`
	StorageClass string       `xml:"StorageClass,omitempty"`
	ObjectSize   *int64       `xml:"ObjectSize,omitempty"`
}

type objectParts struct {
	TotalPartsCount int `xml:"TotalPartsCount"`
}

// getAttributes is GetObjectAttributes: what HEAD tells, asked for by
// name in x-amz-object-attributes.
func (b *dirBackend) getAttributes(w http.ResponseWriter, r *http.Request, bucket, key string) error {
	if _, err := b.bucketPath(bucket); err != nil {
		return err
	}
	var want []string
	for _, v := range r.Header.Values("X-Amz-Object-Attributes") {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				want = append(want, a)
			}
		}
	}
	if len(want) == 0 {
		return &s3Error{http.StatusBadRequest, "InvalidRequest", "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty"}
	}
	for _, a := range want {
		switch a {
		case "ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize":
		default:
			return &s3Error{http.StatusBadRequest, "InvalidArgument", "Invalid attribute name specified."}
		}
	}
	f, fi, etag, m, err := b.openObject(bucket, key)
	if err != nil {
		return err
	}
	f.Close()
	res := &attributesResult{}
	for _, a := range want {
		switch a {
		case "ETag":
			res.ETag = strings.Trim(etag, `"`)
		case "Checksum":
			if m != nil && m.Checksum != "" {
				c := &checksums{ChecksumType: m.ChecksumType}
				c.setChecksum(m.ChecksumAlgo, m.Checksum)
				res.Checksum = c
			}
		case "ObjectParts":
			if m != nil && len(m.Parts) > 0 {
				res.ObjectParts = &objectParts{TotalPartsCount: len(m.Parts)}
			}
		case "StorageClass":
			res.StorageClass = "STANDARD"
		case "ObjectSize":
			size := fi.Size()
			res.ObjectSize = &size
		}
	}
	w.Header().Set("Last-Modified", httpTime(fi.ModTime()))
	writeXML(w, res)
	return nil
}

type deleteRequest struct {
	Quiet   bool `xml:"Quiet"`
	Objects []struct {
		Key       string `xml:"Key"`
		VersionID string `xml:"VersionId"`
		ETag      string `xml:"ETag"`
	} `xml:"Object"`
}

type deleteResult struct {
	XMLName xml.Name `xml:"DeleteResult"`
	Xmlns   string   `xml:"xmlns,attr"`
	Deleted []struct {
		Key string `xml:"Key"`
	} `xml:"Deleted"`
	Errors []deleteError `xml:"Error"`
}

type deleteError struct {
	Key     string `xml:"Key"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// deleteObjects is DeleteObjects, with the per-object ETag conditions.
func (b *dirBackend) deleteObjects(w http.ResponseWriter, r *http.Request, bucket string) error {
	if _, err := b.bucketPath(bucket); err != nil {
		return err
	}
	var in deleteRequest
	if err := xml.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&in); err != nil || len(in.Objects) > 1000 {
		return bodyError(r, &s3Error{http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema."})
	}
	res := &deleteResult{Xmlns: s3NS}
	for _, o := range in.Objects {
		var err error
		switch {
		case o.VersionID != "" && o.VersionID != "null":
			err = &s3Error{http.StatusNotImplemented, "NotImplemented", "versioning is not implemented by this server"}
		case o.ETag != "":
			h := http.Header{"If-Match": {o.ETag}}
			err = b.deleteObject(bucket, o.Key, putConditions(h), nil)
		default:
			err = b.deleteObject(bucket, o.Key, nil, nil)
		}
		if err != nil {
			code, msg := "InternalError", "We encountered an internal error. Please try again."
			var se *s3Error
			var ge gofakes3.Error
			if errors.As(err, &se) {
				code, msg = se.code, se.msg
			} else if errors.As(err, &ge) {
				code = string(ge.ErrorCode())
				if m, ok := s3Messages[code]; ok {
					msg = m
				}
			}
			res.Errors = append(res.Errors, deleteError{o.Key, code, msg})
			continue
		}
		if !in.Quiet {
			res.Deleted = append(res.Deleted, struct {
				Key string `xml:"Key"`
			}{o.Key})
		}
	}
	writeXML(w, res)
	return nil
}
