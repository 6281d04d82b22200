package s3server

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// minPartSize is S3's floor for every part but the last. Enforcing it here
// catches a client that would fail against real S3.
const minPartSize = 5 << 20

// multipart keeps the index of uploads in progress; their parts are files
// under .s3server/uploads/<id>/, so a large upload costs disk, not memory.
type multipart struct {
	mu      sync.Mutex
	uploads map[gofakes3.UploadID]*upload
	// completed remembers finished uploads, so that a Complete retried
	// after a lost answer gets the same answer, as from S3.
	completed map[gofakes3.UploadID]*completedUpload
	// assembling are the uploads a Complete is assembling, out of uploads
	// and not yet in completed.
	assembling map[gofakes3.UploadID]*upload
}

// maxCompleted bounds the finished uploads remembered for retries.
const maxCompleted = 4096

type completedUpload struct {
	bucket, key string
	meta        *objMeta
}

type upload struct {
	id        gofakes3.UploadID
	bucket    string
	key       string
	dir       string
	initiated time.Time
	parts     map[int]part
	headers   map[string]string // stored with the object
	// checksumAlgo, if set, is required of every part; checksumType is
	// COMPOSITE (a checksum of the part checksums) or FULL_OBJECT.
	checksumAlgo, checksumType string
	completing                 sync.Mutex
}

type part struct {
	etag     string // quoted MD5 of the part
	md5      []byte
	size     int64
	mtime    time.Time
	checksum string // base64, of the upload's algorithm
}

type completedPart struct {
	num      int
	etag     string
	checksum string // as the client lists it, if it does
}

func (b *dirBackend) getUpload(bucket, key string, id gofakes3.UploadID) (*upload, error) {
	b.mp.mu.Lock()
	defer b.mp.mu.Unlock()
	u, ok := b.mp.uploads[id]
	if !ok || u.bucket != bucket || u.key != key {
		return nil, gofakes3.ErrNoSuchUpload
	}
	return u, nil
}

// newUpload starts an upload with the headers to store with the object
// and the checksum its parts must carry.
func (b *dirBackend) newUpload(bucket, key string, hdr http.Header) (*upload, error) {
	if _, err := b.objectPath(bucket, key); err != nil {
		return nil, err
	}
	if isDirKey(key) {
		return nil, errDirObjectBody
	}
	headers, err := headersOf(hdr)
	if err != nil {
		return nil, err
	}
	algo := strings.ToLower(hdr.Get("X-Amz-Checksum-Algorithm"))
	typ := strings.ToUpper(hdr.Get("X-Amz-Checksum-Type"))
	switch {
	case typ != "" && typ != "COMPOSITE" && typ != "FULL_OBJECT":
		return nil, &s3Error{http.StatusBadRequest, "InvalidRequest", "Value for x-amz-checksum-type header is invalid."}
	case algo == "" && typ != "":
		return nil, &s3Error{http.StatusBadRequest, "InvalidRequest", "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header."}
	case algo != "" && newChecksum(algo) == nil:
		return nil, errUnknownAlgo
	case typ == "FULL_OBJECT" && !fullObjectOK(algo), typ == "COMPOSITE" && !compositeOK(algo):
		return nil, &s3Error{http.StatusBadRequest, "InvalidRequest", "The " + typ + " checksum type cannot be used with the " + algo + " checksum algorithm."}
	case typ == "" && algo != "" && compositeOK(algo):
		typ = "COMPOSITE"
	case typ == "" && algo != "":
		typ = "FULL_OBJECT"
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	id := gofakes3.UploadID(hex.EncodeToString(rnd[:]))
	dir := filepath.Join(b.uploads, string(id))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	u := &upload{id: id, bucket: bucket, key: key, dir: dir, initiated: time.Now(), parts: map[int]part{},
		headers: headers, checksumAlgo: algo, checksumType: typ}
	b.mp.mu.Lock()
	b.mp.uploads[id] = u
	b.mp.mu.Unlock()
	return u, nil
}

// storePart makes a received temporary file part num of an upload.
func (b *dirBackend) storePart(u *upload, num int, tmp string, p part) error {
	b.mp.mu.Lock()
	defer b.mp.mu.Unlock()
	if b.mp.uploads[u.id] != u { // aborted or completed meanwhile
		return gofakes3.ErrNoSuchUpload
	}
	// Re-uploading a part number replaces it, as in S3.
	if err := os.Rename(tmp, filepath.Join(u.dir, strconv.Itoa(num))); err != nil {
		return err
	}
	p.mtime = time.Now()
	u.parts[num] = p
	return nil
}

func (b *dirBackend) AbortMultipartUpload(bucket, key string, id gofakes3.UploadID) error {
	if _, err := b.bucketPath(bucket); err != nil {
		return err
	}
	u, err := b.getUpload(bucket, key, id)
	if err != nil {
		return err
	}
	b.mp.mu.Lock()
	delete(b.mp.uploads, id)
	b.mp.mu.Unlock()
	return os.RemoveAll(u.dir)
}

// complete assembles the listed parts into the object. Its ETag is S3's
// "<md5 of the part md5s>-<number of parts>", its checksum (when the
// upload has an algorithm) that of the whole object or of the part
// checksums, as the upload's checksum type says.
//
// size, unless negative, is the object size the client expects; final,
// if set, the object checksum it expects.
func (b *dirBackend) complete(bucket, key string, id gofakes3.UploadID, parts []completedPart, size int64, final *checksumReq, cond func(bool, string) error) (*objMeta, error) {
	b.mp.mu.Lock()
	u := b.mp.uploads[id]
	if u == nil {
		u = b.mp.assembling[id]
	}
	b.mp.mu.Unlock()
	if u != nil && u.bucket == bucket && u.key == key {
		// One Complete of an upload at a time: those sent meanwhile wait,
		// then get the answer of the one that succeeded.
		u.completing.Lock()
		defer u.completing.Unlock()
	}
	return b.completeOnce(bucket, key, id, parts, size, final, cond)
}

func (b *dirBackend) completeOnce(bucket, key string, id gofakes3.UploadID, parts []completedPart, size int64, final *checksumReq, cond func(bool, string) error) (*objMeta, error) {
	u, err := b.getUpload(bucket, key, id)
	if errors.Is(err, gofakes3.ErrNoSuchUpload) {
		b.mp.mu.Lock()
		done := b.mp.completed[id]
		b.mp.mu.Unlock()
		if done != nil && done.bucket == bucket && done.key == key {
			return done.meta, nil
		}
	}
	if err != nil {
		return nil, err
	}
	dst, err := b.objectPath(bucket, key)
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, &s3Error{http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema."}
	}
	b.mp.mu.Lock()
	var files []string
	var sizes []int64
	md5s := md5.New()
	var composite hash.Hash
	if u.checksumType == "COMPOSITE" {
		composite = newChecksum(u.checksumAlgo)
	}
	for i, p := range parts {
		if i > 0 && p.num <= parts[i-1].num {
			b.mp.mu.Unlock()
			return nil, &s3Error{http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order. Parts must be ordered by part number."}
		}
		have, ok := u.parts[p.num]
		if !ok || strings.Trim(p.etag, `"`) != strings.Trim(have.etag, `"`) || p.checksum != "" && p.checksum != have.checksum {
			b.mp.mu.Unlock()
			return nil, &s3Error{http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag."}
		}
		if i < len(parts)-1 && have.size < minPartSize {
			b.mp.mu.Unlock()
			return nil, &s3Error{http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size"}
		}
		md5s.Write(have.md5)
		if composite != nil {
			raw, _ := base64.StdEncoding.DecodeString(have.checksum)
			composite.Write(raw)
		}
		files = append(files, filepath.Join(u.dir, strconv.Itoa(p.num)))
		sizes = append(sizes, have.size)
	}
	var total int64
	for _, n := range sizes {
		total += n
	}
	if size >= 0 && size != total {
		b.mp.mu.Unlock()
		// The numbers in the order S3 words them.
		return nil, &s3Error{http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("The provided 'x-amz-mp-object-size' header value %d does not match what was computed: %d", total, size)}
	}
	var compositeSum string
	if composite != nil {
		compositeSum = fmt.Sprintf("%s-%d", base64.StdEncoding.EncodeToString(composite.Sum(nil)), len(parts))
		if final != nil && final.want != compositeSum && strings.SplitN(final.want, "-", 2)[0] != strings.SplitN(compositeSum, "-", 2)[0] {
			b.mp.mu.Unlock()
			return nil, &s3Error{http.StatusBadRequest, "BadDigest", "The " + strings.ToUpper(u.checksumAlgo) + " you specified did not match the calculated checksum."}
		}
	}
	// A failed condition leaves the upload to retry; it is checked again,
	// atomically, when the object is committed.
	if cond != nil {
		cur, _, err := b.etagOfPath(dst)
		if err := cond(err == nil, cur); err != nil {
			b.mp.mu.Unlock()
			return nil, err
		}
	}
	// Taking the upload out of the index makes a concurrent UploadPart,
	// Abort or second Complete fail instead of racing the assembly.
	delete(b.mp.uploads, id)
	b.mp.assembling[id] = u
	b.mp.mu.Unlock()
	defer func() {
		b.mp.mu.Lock()
		delete(b.mp.assembling, id)
		b.mp.mu.Unlock()
	}()
	defer os.RemoveAll(u.dir)

	// Without an algorithm asked for, S3 keeps a CRC64NVME of the object.
	var full hash.Hash
	fullAlgo := u.checksumAlgo
	if u.checksumAlgo == "" {
		fullAlgo = defaultChecksum
	}
	if u.checksumType == "FULL_OBJECT" || u.checksumAlgo == "" {
		full = newChecksum(fullAlgo)
	}
	tmp, err := b.concat(files, full)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	if full != nil && final != nil && final.want != base64.StdEncoding.EncodeToString(full.Sum(nil)) {
		// The parts are gone with the upload, as when S3 refuses it.
		return nil, &s3Error{http.StatusBadRequest, "BadDigest", "The " + strings.ToUpper(fullAlgo) + " you specified did not match the calculated checksum."}
	}
	m := &objMeta{
		ETag:    fmt.Sprintf(`"%x-%d"`, md5s.Sum(nil), len(parts)),
		Parts:   sizes,
		Headers: u.headers,
	}
	switch {
	case full != nil:
		m.ChecksumAlgo, m.Checksum, m.ChecksumType = fullAlgo, base64.StdEncoding.EncodeToString(full.Sum(nil)), "FULL_OBJECT"
	case composite != nil:
		m.ChecksumAlgo, m.ChecksumType, m.Checksum = u.checksumAlgo, "COMPOSITE", compositeSum
	}
	if err := writeMeta(tmp, m); err != nil {
		return nil, err
	}
	if err := b.commit(tmp, dst, key, m.ETag, cond); err != nil {
		return nil, err
	}
	b.mp.mu.Lock()
	if len(b.mp.completed) >= maxCompleted {
		for old := range b.mp.completed { // any one: retries come soon after
			delete(b.mp.completed, old)
			break
		}
	}
	b.mp.completed[id] = &completedUpload{bucket: bucket, key: key, meta: m}
	b.mp.mu.Unlock()
	return m, nil
}

func (b *dirBackend) concat(files []string, full hash.Hash) (string, error) {
	out, err := os.CreateTemp(b.tmp, "complete-*")
	if err != nil {
		return "", err
	}
	fail := func(err error) (string, error) {
		out.Close()
		os.Remove(out.Name())
		return "", err
	}
	var w io.Writer = out
	if full != nil {
		w = io.MultiWriter(out, full)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return fail(err)
		}
		_, err = io.Copy(w, f)
		f.Close()
		if err != nil {
			return fail(err)
		}
	}
	if err := out.Close(); err != nil {
		return fail(err)
	}
	return out.Name(), nil
}
