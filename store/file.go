package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// tmpPrefix marks files being written; List never shows them.
const tmpPrefix = ".sluice-tmp-"

// openFile roots a file store at the directory a path names, or at the
// parent of anything else (a file, or a prefix that does not exist yet),
// returning the rest as the key.
func openFile(rawURL, p string) (Driver, string, string, error) {
	if p == "" {
		return nil, "", "", &Error{Op: "open", URL: rawURL, Kind: KindInvalid, Err: errors.New("empty path")}
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return nil, "", "", &Error{Op: "open", URL: rawURL, Kind: KindInvalid, Err: err}
	}
	root, key := abs, ""
	if fi, err := os.Stat(abs); (err != nil || !fi.IsDir()) && !strings.HasSuffix(p, "/") {
		root, key = filepath.Dir(abs), filepath.Base(abs)
	}
	// The root "/" already ends in the slash the URL's base ends in.
	return &fileDriver{root: root}, "file://" + strings.TrimSuffix(filepath.ToSlash(root), "/") + "/", key, nil
}

// NewFileDriver returns a driver rooted at dir; keys cannot leave it.
func NewFileDriver(dir string) (Driver, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &fileDriver{root: abs}, nil
}

type fileDriver struct {
	root string
}

func (d *fileDriver) path(key string) (string, error) {
	if err := checkKey(key, true); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	p := filepath.Join(d.root, filepath.FromSlash(key))
	if p != d.root && !strings.HasPrefix(p, d.root+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: key escapes the root", ErrInvalid)
	}
	return p, nil
}

// etag changes whenever a write commits: a rename gives a new inode and mtime.
func fileETag(fi fs.FileInfo) string {
	return fmt.Sprintf(`"%x-%x"`, fi.ModTime().UnixNano(), fi.Size())
}

func (d *fileDriver) info(key string, fi fs.FileInfo) ObjectInfo {
	return ObjectInfo{Key: key, Size: fi.Size(), ETag: fileETag(fi), ModTime: fi.ModTime()}
}

func (d *fileDriver) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	// Walk only the deepest directory the prefix names.
	dir := ""
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dir = prefix[:i]
	}
	start, err := d.path(dir)
	if err != nil {
		return err
	}
	var infos []ObjectInfo
	err = filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(d.root, p)
		key := filepath.ToSlash(rel)
		if e.IsDir() {
			if p != start && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(e.Name(), tmpPrefix) || !strings.HasPrefix(key, prefix) || !e.Type().IsRegular() {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return nil // removed while listing
		}
		infos = append(infos, d.info(key, fi))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	for _, o := range infos {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

func (d *fileDriver) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	p, err := d.path(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return ObjectInfo{}, err
	}
	if !fi.Mode().IsRegular() {
		return ObjectInfo{}, fmt.Errorf("%w: %s is not a regular file", ErrNotFound, key)
	}
	return d.info(key, fi), nil
}

func (d *fileDriver) ReadRange(ctx context.Context, key string, r Range, opts ReadOptions) (io.ReadCloser, ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, ObjectInfo{}, err
	}
	p, err := d.path(key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w: %s is not a regular file", ErrNotFound, key)
	}
	if err != nil {
		f.Close()
		return nil, ObjectInfo{}, err
	}
	info := d.info(key, fi)
	if opts.IfMatch != "" && opts.IfMatch != info.ETag {
		f.Close()
		return nil, info, ErrPrecondition
	}
	start, end := resolveRange(r, info.Size)
	return &sectionCloser{SectionReader: io.NewSectionReader(f, start, end-start), f: f}, info, nil
}

type sectionCloser struct {
	*io.SectionReader
	f *os.File
}

func (s *sectionCloser) Close() error { return s.f.Close() }

func (d *fileDriver) NewWriter(ctx context.Context, key string, opts WriteOptions) (DriverWriter, error) {
	if key == "" {
		return nil, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(p), tmpPrefix+hex.EncodeToString(rnd[:])+"-"+filepath.Base(p))
	var f *os.File
	// A concurrent delete or abort may prune a directory it left empty
	// while MkdirAll makes the ones below it, or before OpenFile: each
	// such loss is another writer's or deleter's step, so a few more
	// tries cover it.
	for try := 0; ; try++ {
		err := os.MkdirAll(filepath.Dir(p), 0o755)
		if err == nil {
			f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err == nil {
				break
			}
		}
		if try >= 8 || !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return &fileWriter{ctx: ctx, f: f, tmp: tmp, dst: p, root: d.root, stored: opts.Stored}, nil
}

// fileWriter writes under a temporary name and renames on Close, so readers
// never see a partial file.
type fileWriter struct {
	ctx    context.Context
	f      *os.File
	tmp    string
	dst    string
	root   string
	done   bool
	stored func(int64)
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("%w: write after close", ErrInvalid)
	}
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := w.f.Write(p)
	if n > 0 && w.stored != nil {
		w.stored(int64(n))
	}
	return n, err
}

func (w *fileWriter) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	err := w.ctx.Err()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.tmp, w.dst)
	}
	if err != nil {
		os.Remove(w.tmp)
		pruneDirs(w.root, filepath.Dir(w.tmp))
	}
	return err
}

func (w *fileWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.Close()
	err := os.Remove(w.tmp)
	pruneDirs(w.root, filepath.Dir(w.tmp))
	return err
}

func (d *fileDriver) Delete(ctx context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(p); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrNotFound, key)
	}
	if err := os.Remove(p); err != nil {
		return err
	}
	pruneDirs(d.root, filepath.Dir(p))
	return nil
}

// pruneDirs removes the directories below root that dir leaves empty:
// object stores have no directories, so none should outlive their objects.
func pruneDirs(root, dir string) {
	for ; dir != root && strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return
		}
	}
}

func (d *fileDriver) Classify(err error) Kind {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return KindNotFound
	case errors.Is(err, fs.ErrPermission):
		return KindPermission
	}
	return KindOf(err)
}

func (d *fileDriver) Close() error { return nil }
