package s3server

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A key ending in "/" (a "directory object", which the AWS console makes
// for folders and Hadoop's S3A for directories) is the directory of that
// name with the object's metadata in the directory's metaXattr. Only
// empty ones are stored: a directory holds no bytes. Without the
// attribute a directory is no object, only a prefix, as in S3.

// emptyETag is the MD5 of nothing.
const emptyETag = `"d41d8cd98f00b204e9800998ecf8427e"`

var errDirObjectBody = &s3Error{http.StatusBadRequest, "InvalidArgument",
	"this server stores a key ending in '/' as a directory: its object must be empty"}

func isDirKey(key string) bool { return strings.HasSuffix(key, "/") }

// dirObjInfo describes a directory object: no bytes, the time it was put.
type dirObjInfo struct {
	os.FileInfo
	mtime time.Time
}

func (d dirObjInfo) Size() int64        { return 0 }
func (d dirObjInfo) Mode() fs.FileMode  { return 0o644 }
func (d dirObjInfo) ModTime() time.Time { return d.mtime }
func (d dirObjInfo) IsDir() bool        { return false }

// readDirMeta returns the directory object stored on an open directory,
// nil if there is none. A directory's time changes with its entries, so
// the recorded version is not checked.
func readDirMeta(f *os.File) *objMeta {
	buf := make([]byte, 4<<10)
	n, err := unix.Fgetxattr(int(f.Fd()), metaXattr, buf)
	if err != nil {
		return nil
	}
	var m objMeta
	if json.Unmarshal(buf[:n], &m) != nil {
		return nil
	}
	return &m
}

// dirObject returns the directory object at p (relative to the root).
func (b *dirBackend) dirObject(p string) *objMeta {
	f, err := b.fs.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return nil
	}
	return readDirMeta(f)
}

// putDirObject stores an empty object under a key ending in "/".
func (b *dirBackend) putDirObject(dst, key string, m *objMeta, cond func(bool, string) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cond != nil {
		cur := b.dirObject(dst)
		etag := ""
		if cur != nil {
			etag = cur.ETag
		}
		if err := cond(cur != nil, etag); err != nil {
			return err
		}
	}
	if err := b.fs.MkdirAll(dst, 0o755); err != nil {
		return conflict(key, err)
	}
	f, err := b.fs.Open(dst)
	if err != nil {
		return conflict(key, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return conflict(key, syscall.ENOTDIR)
	}
	m.Size, m.MTime, m.ETag = 0, time.Now().UnixNano(), emptyETag
	buf, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := unix.Fsetxattr(int(f.Fd()), metaXattr, buf, 0); err != nil {
		if errors.Is(err, syscall.ENOTSUP) {
			return &s3Error{http.StatusNotImplemented, "NotImplemented", "keys ending in '/' need a file system with user extended attributes"}
		}
		return err
	}
	return nil
}

// deleteDirObject removes the object under a key ending in "/": the
// directory stays while it holds other objects.
func (b *dirBackend) deleteDirObject(bp, p string) error {
	f, err := b.fs.Open(p)
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() || readDirMeta(f) == nil {
		f.Close()
		return nil
	}
	err = unix.Fremovexattr(int(f.Fd()), metaXattr)
	f.Close()
	if err != nil {
		return err
	}
	b.fs.Remove(p) // only if empty
	b.prune(bp, path.Dir(p))
	return nil
}

// prune removes the empty directories from d up to the bucket: they are
// not objects, and "a" can become an object again once "a/b" is gone.
// Directory objects stay.
func (b *dirBackend) prune(bp, d string) {
	for ; d != bp && strings.HasPrefix(d, bp+"/"); d = path.Dir(d) {
		if b.dirObject(d) != nil || b.fs.Remove(d) != nil {
			return
		}
	}
}
