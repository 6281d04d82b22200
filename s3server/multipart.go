package s3server

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// minPartSize is S3's floor for every part but the last. Enforcing it here
// catches a client that would fail against real S3 (gofakes3's in-memory
// uploader does not).
const minPartSize = 5 << 20

// multipart keeps the index of uploads in progress; their parts are files
// under .s3server/uploads/<id>/, so a large upload costs disk, not memory.
type multipart struct {
	mu      sync.Mutex
	uploads map[gofakes3.UploadID]*upload
}

type upload struct {
	id        gofakes3.UploadID
	bucket    string
	key       string
	dir       string
	initiated time.Time
	parts     map[int]part
}

type part struct {
	etag  string // quoted MD5 of the part
	size  int64
	mtime time.Time
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

func (b *dirBackend) CreateMultipartUpload(bucket, key string, meta map[string]string) (gofakes3.UploadID, error) {
	if _, err := b.objectPath(bucket, key); err != nil {
		return "", err
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	id := gofakes3.UploadID(hex.EncodeToString(rnd[:]))
	dir := filepath.Join(b.uploads, string(id))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	b.mp.mu.Lock()
	b.mp.uploads[id] = &upload{id: id, bucket: bucket, key: key, dir: dir, initiated: time.Now(), parts: map[int]part{}}
	b.mp.mu.Unlock()
	return id, nil
}

func (b *dirBackend) UploadPart(bucket, key string, id gofakes3.UploadID, num int, size int64, input io.Reader) (string, error) {
	if num < 1 || num > gofakes3.MaxUploadPartNumber {
		return "", gofakes3.ErrInvalidPart
	}
	u, err := b.getUpload(bucket, key, id)
	if err != nil {
		return "", err
	}
	tmp, sum, err := b.writeTemp(u.dir, input, size)
	if err != nil {
		return "", err
	}
	b.mp.mu.Lock()
	defer b.mp.mu.Unlock()
	if b.mp.uploads[id] != u { // aborted or completed meanwhile
		os.Remove(tmp)
		return "", gofakes3.ErrNoSuchUpload
	}
	// Re-uploading a part number replaces it, as in S3.
	if err := os.Rename(tmp, filepath.Join(u.dir, strconv.Itoa(num))); err != nil {
		os.Remove(tmp)
		return "", err
	}
	etag := gofakes3.FormatETag(sum)
	u.parts[num] = part{etag: etag, size: size, mtime: time.Now()}
	return etag, nil
}

func (b *dirBackend) AbortMultipartUpload(bucket, key string, id gofakes3.UploadID) error {
	u, err := b.getUpload(bucket, key, id)
	if err != nil {
		return err
	}
	b.mp.mu.Lock()
	delete(b.mp.uploads, id)
	b.mp.mu.Unlock()
	return os.RemoveAll(u.dir)
}

func (b *dirBackend) CompleteMultipartUpload(bucket, key string, id gofakes3.UploadID, in *gofakes3.CompleteMultipartUploadRequest) (gofakes3.VersionID, string, error) {
	u, err := b.getUpload(bucket, key, id)
	if err != nil {
		return "", "", err
	}
	dst, err := b.objectPath(bucket, key)
	if err != nil {
		return "", "", err
	}
	if len(in.Parts) == 0 {
		return "", "", gofakes3.ErrorMessage(gofakes3.ErrMalformedXML, "a multipart upload needs at least one part")
	}
	b.mp.mu.Lock()
	var files []string
	for i, p := range in.Parts {
		if i > 0 && p.PartNumber <= in.Parts[i-1].PartNumber {
			b.mp.mu.Unlock()
			return "", "", gofakes3.ErrInvalidPartOrder
		}
		have, ok := u.parts[p.PartNumber]
		if !ok || strings.Trim(p.ETag, `"`) != strings.Trim(have.etag, `"`) {
			b.mp.mu.Unlock()
			return "", "", gofakes3.ErrorMessagef(gofakes3.ErrInvalidPart, "part %d was not uploaded or its ETag differs", p.PartNumber)
		}
		if i < len(in.Parts)-1 && have.size < minPartSize {
			b.mp.mu.Unlock()
			return "", "", gofakes3.ErrorMessagef(gofakes3.ErrInvalidPart,
				"EntityTooSmall: part %d is %d bytes; every part but the last must be at least 5 MiB", p.PartNumber, have.size)
		}
		files = append(files, filepath.Join(u.dir, strconv.Itoa(p.PartNumber)))
	}
	// Taking the upload out of the index makes a concurrent UploadPart,
	// Abort or second Complete fail instead of racing the assembly.
	delete(b.mp.uploads, id)
	b.mp.mu.Unlock()
	defer os.RemoveAll(u.dir)

	tmp, sum, err := b.concat(files)
	if err != nil {
		return "", "", err
	}
	if err := b.commit(tmp, dst, key, sum, nil); err != nil {
		os.Remove(tmp)
		return "", "", err
	}
	// S3 would answer "<md5 of the part md5s>-<parts>"; this server's
	// ETags are always the MD5 of the content, so that the ETag returned
	// here is the one HEAD, GET and List report.
	return "", gofakes3.FormatETag(sum), nil
}

func (b *dirBackend) concat(files []string) (string, []byte, error) {
	out, err := os.CreateTemp(b.tmp, "complete-*")
	if err != nil {
		return "", nil, err
	}
	fail := func(err error) (string, []byte, error) {
		out.Close()
		os.Remove(out.Name())
		return "", nil, err
	}
	h := md5.New()
	w := io.MultiWriter(out, h)
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
	return out.Name(), h.Sum(nil), nil
}

func (b *dirBackend) ListMultipartUploads(bucket string, marker *gofakes3.UploadListMarker, prefix gofakes3.Prefix, limit int64) (*gofakes3.ListMultipartUploadsResult, error) {
	if _, err := b.bucketPath(bucket); err != nil {
		return nil, err
	}
	b.mp.mu.Lock()
	var ups []*upload
	for _, u := range b.mp.uploads {
		if u.bucket == bucket && strings.HasPrefix(u.key, prefix.Prefix) {
			ups = append(ups, u)
		}
	}
	b.mp.mu.Unlock()
	sort.Slice(ups, func(i, j int) bool {
		if ups[i].key != ups[j].key {
			return ups[i].key < ups[j].key
		}
		return ups[i].id < ups[j].id
	})
	res := &gofakes3.ListMultipartUploadsResult{Bucket: bucket, Prefix: prefix.Prefix, MaxUploads: limit}
	if marker != nil {
		res.KeyMarker, res.UploadIDMarker = marker.Object, marker.UploadID
	}
	for _, u := range ups {
		if marker != nil && (u.key < marker.Object || u.key == marker.Object && (marker.UploadID == "" || u.id <= marker.UploadID)) {
			continue
		}
		if limit > 0 && int64(len(res.Uploads)) == limit {
			res.IsTruncated = true
			last := res.Uploads[len(res.Uploads)-1]
			res.NextKeyMarker, res.NextUploadIDMarker = last.Key, last.UploadID
			break
		}
		res.Uploads = append(res.Uploads, gofakes3.ListMultipartUploadItem{
			Key:          u.key,
			UploadID:     u.id,
			StorageClass: gofakes3.StorageStandard,
			Initiated:    gofakes3.NewContentTime(u.initiated),
		})
	}
	return res, nil
}

func (b *dirBackend) ListParts(bucket, key string, id gofakes3.UploadID, marker int, limit int64) (*gofakes3.ListMultipartUploadPartsResult, error) {
	u, err := b.getUpload(bucket, key, id)
	if err != nil {
		return nil, err
	}
	b.mp.mu.Lock()
	nums := make([]int, 0, len(u.parts))
	for n := range u.parts {
		if n > marker {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	res := &gofakes3.ListMultipartUploadPartsResult{
		Bucket: bucket, Key: key, UploadID: id,
		PartNumberMarker: marker, MaxParts: limit,
		StorageClass: gofakes3.StorageStandard,
	}
	for _, n := range nums {
		if limit > 0 && int64(len(res.Parts)) == limit {
			res.IsTruncated = true
			break
		}
		p := u.parts[n]
		res.Parts = append(res.Parts, gofakes3.ListMultipartUploadPartItem{
			PartNumber: n, ETag: p.etag, Size: p.size, LastModified: gofakes3.NewContentTime(p.mtime),
		})
		res.NextPartNumberMarker = n
	}
	b.mp.mu.Unlock()
	return res, nil
}

var _ gofakes3.MultipartBackend = (*dirBackend)(nil)
var _ gofakes3.Backend = (*dirBackend)(nil)
