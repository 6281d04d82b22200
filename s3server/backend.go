package s3server

import (
	"crypto/md5"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"golang.org/x/sync/singleflight"
)

// stateDir holds the server's own files (temporary files, multipart parts)
// at the top of the served directory. A leading dot is not a valid bucket
// name, so it never shows up as a bucket, and it is on the same file
// system as the buckets, so committing an object is a rename.
const stateDir = ".s3server"

// dirBackend is the store behind the handlers, a directory: each top-level
// subdirectory is a bucket, each regular file below it an object whose key
// is its slash-separated path.
//
// Writes go to a temporary file and are renamed into place, so a reader
// sees the old object or the new one, never a mix, and a failed upload
// leaves nothing. ETags are MD5 of the content, remembered per file
// version (device, inode, size, mtime) and computed on first use for files
// that were put there by other means.
type dirBackend struct {
	root    string
	tmp     string
	uploads string

	// owner is the owner listings name: the access key.
	owner string
	// region is the server's region, as HEAD bucket and listings name it.
	region string

	// fs is the only way to the buckets: every path a request names is
	// resolved through it, so neither "..", nor an absolute path, nor a
	// symbolic link (or a directory renamed meanwhile) reaches a file
	// outside the root.
	fs *os.Root

	// mu orders the metadata operations that must not interleave: a
	// conditional check and its rename, and pruning empty directories
	// against creating them. It is never held while data is copied.
	mu sync.Mutex

	etagMu  sync.Mutex
	etags   map[fileID]etagEntry
	hashing singleflight.Group

	mp multipart
}

type fileID struct{ dev, ino uint64 }

type etagEntry struct {
	size  int64
	mtime int64
	etag  string // quoted
}

func newDirBackend(dir string) (*dirBackend, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	b := &dirBackend{
		root:    root,
		tmp:     filepath.Join(root, stateDir, "tmp"),
		uploads: filepath.Join(root, stateDir, "uploads"),
		etags:   map[fileID]etagEntry{},
	}
	b.mp.uploads = map[gofakes3.UploadID]*upload{}
	b.mp.completed = map[gofakes3.UploadID]*completedUpload{}
	b.mp.assembling = map[gofakes3.UploadID]*upload{}
	// Uploads do not survive a restart (their index is in memory), so
	// whatever a previous run left is garbage.
	if err := os.RemoveAll(filepath.Join(root, stateDir)); err != nil {
		return nil, err
	}
	for _, d := range []string{b.tmp, b.uploads} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if b.fs, err = os.OpenRoot(root); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *dirBackend) close() error { return b.fs.Close() }

// rel is the name under the root of one of the server's own files.
func (b *dirBackend) rel(abs string) string {
	r, err := filepath.Rel(b.root, abs)
	if err != nil {
		panic(err) // the server's own files are under the root by construction
	}
	return r
}

// isEscape reports an os.Root refusal: the name leads outside the root
// (through "..", or a symbolic link pointing out). os does not export the
// error, only its text.
func isEscape(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// absent reports errors meaning there is no such file inside the root.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) || isEscape(err)
}

// bucketPath is the bucket's directory, relative to the root.
func (b *dirBackend) bucketPath(bucket string) (string, error) {
	if gofakes3.ValidateBucketName(bucket) != nil {
		return "", gofakes3.BucketNotFound(bucket)
	}
	fi, err := b.fs.Stat(bucket)
	if err != nil || !fi.IsDir() {
		return "", gofakes3.BucketNotFound(bucket)
	}
	return bucket, nil
}

// checkKey rejects keys that have no file of their own: empty segments
// ("a//b"), "." and "..", NUL. S3 allows them; a directory cannot. One
// trailing "/" is a directory object (see dirobject.go).
func checkKey(key string) error {
	if key == "" || len(key) > gofakes3.KeySizeLimit || strings.ContainsRune(key, 0) {
		return gofakes3.ErrorInvalidArgument("key", key, "key cannot be stored as a file")
	}
	for _, seg := range strings.Split(strings.TrimSuffix(key, "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return gofakes3.ErrorInvalidArgument("key", key,
				"this server stores objects as files: a key may not have empty, '.' or '..' segments")
		}
	}
	return nil
}

// objectPath is the object's file, relative to the root.
func (b *dirBackend) objectPath(bucket, key string) (string, error) {
	bp, err := b.bucketPath(bucket)
	if err != nil {
		return "", err
	}
	if err := checkKey(key); err != nil {
		return "", err
	}
	return bp + "/" + strings.TrimSuffix(key, "/"), nil
}

func (b *dirBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	ents, err := fs.ReadDir(b.fs.FS(), ".")
	if err != nil {
		return nil, err
	}
	var out []gofakes3.BucketInfo
	for _, e := range ents {
		if !e.IsDir() || gofakes3.ValidateBucketName(e.Name()) != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, gofakes3.BucketInfo{Name: e.Name(), CreationDate: gofakes3.NewContentTime(info.ModTime())})
	}
	return out, nil
}

func (b *dirBackend) CreateBucket(name string) error {
	if err := gofakes3.ValidateBucketName(name); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.fs.Lstat(name); err == nil {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	return b.fs.Mkdir(name, 0o755)
}

func (b *dirBackend) DeleteBucket(name string) error {
	bp, err := b.bucketPath(name)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	empty := true
	_ = fs.WalkDir(b.fs.FS(), bp, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (!d.IsDir() || p != bp && b.dirObject(p) != nil) {
			empty = false
			return filepath.SkipAll
		}
		return nil
	})
	if !empty {
		return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
	}
	return b.fs.RemoveAll(bp)
}

// listEntry is a key, or a common prefix when delimited.
type listEntry struct {
	name   string
	prefix bool
	path   string
	size   int64
	mtime  time.Time
	etag   string
	meta   *objMeta
}

// list returns, in S3 key order, up to max keys and common prefixes
// (delimited by delim) that start with pfx and come after marker, with
// their ETags and metadata, and whether more follow.
func (b *dirBackend) list(bucket, pfx, delim, marker string, max int64) ([]listEntry, bool, error) {
	bp, err := b.bucketPath(bucket)
	if err != nil {
		return nil, false, err
	}
	if max <= 0 {
		return nil, false, nil
	}
	// Walk only the directory the prefix points into. If the prefix up to
	// its last "/" is no path a key can have ("..", empty segments), no key
	// starts with it.
	start := bp
	if i := strings.LastIndexByte(pfx, '/'); i >= 0 {
		if d := pfx[:i]; checkKey(d) != nil || isDirKey(d) {
			return nil, false, nil
		}
		start = bp + "/" + pfx[:i]
	}
	var keys []listEntry
	err = fs.WalkDir(b.fs.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			// Gone meanwhile, or the prefix runs through an object
			// ("obj/sub/"): nothing there.
			if absent(err) {
				return nil
			}
			return err
		}
		key := strings.TrimPrefix(p, bp+"/")
		if d.IsDir() {
			if p != start && !strings.HasPrefix(key+"/", pfx) && !strings.HasPrefix(pfx, key+"/") {
				return filepath.SkipDir
			}
			if p != bp && strings.HasPrefix(key+"/", pfx) {
				if m := b.dirObject(p); m != nil {
					keys = append(keys, listEntry{name: key + "/", mtime: time.Unix(0, m.MTime), etag: m.ETag, meta: m})
				}
			}
			return nil
		}
		if !strings.HasPrefix(key, pfx) {
			return nil
		}
		fi, err := b.fs.Stat(p) // follows symbolic links that stay inside the root
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		keys = append(keys, listEntry{name: key, path: p, size: fi.Size(), mtime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	// Walk order is per directory; S3 order is by the whole key's bytes
	// ("a-b" sorts before "a/b").
	sort.Slice(keys, func(i, j int) bool { return keys[i].name < keys[j].name })

	var out []listEntry
	last := ""
	for _, e := range keys {
		if delim != "" {
			if i := strings.Index(e.name[len(pfx):], delim); i >= 0 {
				e = listEntry{name: e.name[:len(pfx)+i+len(delim)], prefix: true}
			}
		}
		if marker != "" && e.name <= marker || e.prefix && e.name == last {
			continue
		}
		if int64(len(out)) == max {
			return out, true, nil
		}
		last = e.name
		if !e.prefix && e.etag == "" {
			e.etag, e.meta, err = b.etagOfPath(e.path)
			if err != nil {
				if absent(err) {
					continue // deleted or replaced while listing
				}
				return nil, false, err
			}
		}
		out = append(out, e)
	}
	return out, false, nil
}

// openObject opens an object's file; the open file pins that version, so
// its ETag, metadata, size and bytes agree even if it is replaced
// meanwhile.
func (b *dirBackend) openObject(bucket, key string) (*os.File, os.FileInfo, string, *objMeta, error) {
	p, err := b.objectPath(bucket, key)
	if err != nil {
		var ia *gofakes3.ErrorInvalidArgumentResponse
		if errors.As(err, &ia) {
			return nil, nil, "", nil, gofakes3.KeyNotFound(key)
		}
		return nil, nil, "", nil, err
	}
	f, err := b.fs.Open(p)
	if err != nil {
		if absent(err) {
			return nil, nil, "", nil, gofakes3.KeyNotFound(key)
		}
		return nil, nil, "", nil, err
	}
	fi, err := f.Stat()
	if err == nil && isDirKey(key) {
		var m *objMeta
		if fi.IsDir() {
			m = readDirMeta(f)
		}
		if m == nil {
			f.Close()
			return nil, nil, "", nil, gofakes3.KeyNotFound(key)
		}
		return f, dirObjInfo{fi, time.Unix(0, m.MTime)}, m.ETag, m, nil
	}
	if err == nil && !fi.Mode().IsRegular() {
		err = gofakes3.KeyNotFound(key)
	}
	var etag string
	var m *objMeta
	if err == nil {
		etag, m, err = b.etag(f, fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, "", nil, err
	}
	return f, fi, etag, m, nil
}

// etag returns the ETag of an open file: the one stored with it when the
// server wrote it (a multipart ETag is not an MD5), else the MD5 of its
// content, from the cache when this version of the file was seen before.
func (b *dirBackend) etag(f *os.File, fi os.FileInfo) (string, *objMeta, error) {
	if m := readMeta(f, fi); m != nil && m.ETag != "" {
		return m.ETag, m, nil
	}
	id, ok := idOf(fi)
	if ok {
		b.etagMu.Lock()
		e, hit := b.etags[id]
		b.etagMu.Unlock()
		if hit && e.size == fi.Size() && e.mtime == fi.ModTime().UnixNano() {
			return e.etag, nil, nil
		}
	}
	if !ok {
		sum, err := md5Of(f, fi.Size())
		return quoteETag(sum), nil, err
	}
	// Parallel range reads of a file not seen before would each hash all
	// of it; one does, the others wait for its result.
	key := fmt.Sprintf("%d:%d:%d:%d", id.dev, id.ino, fi.Size(), fi.ModTime().UnixNano())
	v, err, _ := b.hashing.Do(key, func() (any, error) {
		sum, err := md5Of(f, fi.Size())
		if err != nil {
			return "", err
		}
		etag := quoteETag(sum)
		b.remember(id, fi, etag)
		return etag, nil
	})
	if err != nil {
		return "", nil, err
	}
	return v.(string), nil, nil
}

func md5Of(f *os.File, size int64) ([]byte, error) {
	h := md5.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

func (b *dirBackend) etagOfPath(p string) (string, *objMeta, error) {
	f, err := b.fs.Open(p)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	return b.etag(f, fi)
}

func (b *dirBackend) remember(id fileID, fi os.FileInfo, etag string) {
	b.etagMu.Lock()
	b.etags[id] = etagEntry{size: fi.Size(), mtime: fi.ModTime().UnixNano(), etag: etag}
	b.etagMu.Unlock()
}

func (b *dirBackend) forget(fi os.FileInfo) {
	if id, ok := idOf(fi); ok {
		b.etagMu.Lock()
		delete(b.etags, id)
		b.etagMu.Unlock()
	}
}

func idOf(fi os.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, true
}

// writeTemp copies r, which must hold exactly size bytes, into a new
// temporary file and returns it closed, with its MD5 (and the sums of the
// extra hashes, fed the same bytes). On error nothing is left behind.
func (b *dirBackend) writeTemp(dir string, r io.Reader, size int64, extra ...hash.Hash) (path string, sum []byte, err error) {
	f, err := os.CreateTemp(dir, "put-*")
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := md5.New()
	ws := []io.Writer{f, h}
	for _, x := range extra {
		ws = append(ws, x)
	}
	// Read to EOF, not just size bytes: the readers the signature check
	// wraps around the body verify digests and trailers at EOF.
	n, err := io.Copy(io.MultiWriter(ws...), r)
	if err != nil {
		return "", nil, err
	}
	if n != size {
		return "", nil, errShortBody
	}
	if err := f.Close(); err != nil {
		return "", nil, err
	}
	return f.Name(), h.Sum(nil), nil
}

// commit renames a finished temporary file to the object's path, after
// checking the put's conditions (if any) against the object it replaces.
func (b *dirBackend) commit(tmp, dst, key, etag string, cond func(exists bool, etag string) error) error {
	fi, err := os.Stat(tmp)
	if err != nil {
		return err
	}
	tmpRel := b.rel(tmp)
	b.mu.Lock()
	defer b.mu.Unlock()
	if cond != nil {
		cur, _, err := b.etagOfPath(dst)
		if err := cond(err == nil, cur); err != nil {
			return err
		}
	}
	if err := b.fs.MkdirAll(path.Dir(dst), 0o755); err != nil {
		return conflict(key, err)
	}
	// A symbolic link at dst is replaced, never written through.
	if old, err := b.fs.Lstat(dst); err == nil {
		if old.IsDir() {
			return conflict(key, syscall.EISDIR)
		}
		b.forget(old)
	}
	if err := b.fs.Rename(tmpRel, dst); err != nil {
		return conflict(key, err)
	}
	if id, ok := idOf(fi); ok {
		b.remember(id, fi, etag)
	}
	return nil
}

func conflict(key string, err error) error {
	if isEscape(err) {
		return gofakes3.ErrorInvalidArgument("key", key, "the key's path leads out of the served directory")
	}
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) || errors.Is(err, syscall.EEXIST) || errors.Is(err, syscall.ENOTEMPTY) {
		return gofakes3.ErrorInvalidArgument("key", key,
			"this server stores objects as files: a key cannot be both an object and a prefix of another object (\"a\" and \"a/b\")")
	}
	return err
}

// deleteObject deletes an object if cond and match (when set) hold for
// it; the check and the delete are one step for other writers.
func (b *dirBackend) deleteObject(bucket, key string, cond func(exists bool, etag string) error, match func(fi os.FileInfo) error) error {
	bp, err := b.bucketPath(bucket)
	if err != nil {
		return err
	}
	if checkKey(key) != nil {
		if cond != nil {
			return cond(false, "")
		}
		if match != nil {
			return match(nil)
		}
		return nil // cannot exist; S3 deletes are idempotent
	}
	p := bp + "/" + strings.TrimSuffix(key, "/")
	b.mu.Lock()
	defer b.mu.Unlock()
	if cond != nil || match != nil {
		f, fi, etag, _, err := b.openObject(bucket, key)
		if err == nil {
			f.Close()
		} else {
			fi = nil
		}
		if cond != nil {
			if err := cond(err == nil, etag); err != nil {
				return err
			}
		}
		if match != nil {
			if err := match(fi); err != nil {
				return err
			}
		}
	}
	if isDirKey(key) {
		return b.deleteDirObject(bp, p)
	}
	fi, err := b.fs.Lstat(p)
	if err != nil || fi.IsDir() {
		return nil
	}
	if err := b.fs.Remove(p); err != nil && !absent(err) {
		return err
	}
	b.forget(fi)
	b.prune(bp, path.Dir(p))
	return nil
}
