package store

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// MemBuckets are mem:// buckets by name: every Open of mem://name whose
// Options.MemBuckets is the same MemBuckets sees the same objects, for as
// long as its owner keeps it (a process, a pipeline run, a test). It is
// safe for concurrent use. The zero value is not usable; use
// NewMemBuckets.
type MemBuckets struct {
	mu sync.Mutex
	m  map[string]*memDriver
}

// NewMemBuckets returns an empty set of mem:// buckets.
func NewMemBuckets() *MemBuckets { return &MemBuckets{m: map[string]*memDriver{}} }

// bucket is the bucket named name, made empty on first use. With no
// MemBuckets (b nil) every call makes a new one.
func (b *MemBuckets) bucket(name string) *memDriver {
	if b == nil {
		return newMem()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.m[name]
	if !ok {
		d = newMem()
		b.m[name] = d
	}
	return d
}

type memObject struct {
	data []byte
	info ObjectInfo
}

type memDriver struct {
	mu      sync.RWMutex
	objects map[string]*memObject
}

// NewMemDriver returns an empty in-memory driver. It is the reference
// implementation the conformance suite is written against.
func NewMemDriver() Driver { return newMem() }

func newMem() *memDriver { return &memDriver{objects: map[string]*memObject{}} }

func (d *memDriver) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	d.mu.RLock()
	var infos []ObjectInfo
	for k, o := range d.objects {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, o.info)
		}
	}
	d.mu.RUnlock()
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	for _, o := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

func (d *memDriver) get(key string) (*memObject, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	o, ok := d.objects[key]
	if !ok {
		return nil, ErrNotFound
	}
	return o, nil
}

func (d *memDriver) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	o, err := d.get(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	return o.info, nil
}

func (d *memDriver) ReadRange(ctx context.Context, key string, r Range, opts ReadOptions) (io.ReadCloser, ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, ObjectInfo{}, err
	}
	o, err := d.get(key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	if opts.IfMatch != "" && opts.IfMatch != o.info.ETag {
		return nil, o.info, ErrPrecondition
	}
	start, end := resolveRange(r, o.info.Size)
	return io.NopCloser(bytes.NewReader(o.data[start:end])), o.info, nil
}

// resolveRange turns a Range into [start, end) within an object of size n.
func resolveRange(r Range, n int64) (start, end int64) {
	if r.Off < 0 {
		start = max(n+r.Off, 0)
		return start, n
	}
	start = min(r.Off, n)
	end = n
	if r.Len >= 0 && start+r.Len < n {
		end = start + r.Len
	}
	return start, end
}

func (d *memDriver) NewWriter(ctx context.Context, key string, opts WriteOptions) (DriverWriter, error) {
	return &memWriter{ctx: ctx, d: d, key: key, stored: opts.Stored}, nil
}

type memWriter struct {
	ctx    context.Context
	d      *memDriver
	key    string
	buf    bytes.Buffer
	done   bool
	stored func(int64)
}

func (w *memWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, ErrInvalid
	}
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := w.buf.Write(p)
	if w.stored != nil {
		w.stored(int64(n))
	}
	return n, err
}

func (w *memWriter) Close() error {
	if w.done {
		return nil
	}
	w.done = true
	if err := w.ctx.Err(); err != nil {
		return err
	}
	data := bytes.Clone(w.buf.Bytes())
	sum := md5.Sum(data)
	o := &memObject{data: data, info: ObjectInfo{Key: w.key, Size: int64(len(data)), ETag: `"` + hex.EncodeToString(sum[:]) + `"`, ModTime: time.Now()}}
	w.d.mu.Lock()
	w.d.objects[w.key] = o
	w.d.mu.Unlock()
	return nil
}

func (w *memWriter) Abort() error {
	w.done = true
	w.buf = bytes.Buffer{}
	return nil
}

func (d *memDriver) Delete(ctx context.Context, key string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.objects[key]; !ok {
		return ErrNotFound
	}
	delete(d.objects, key)
	return nil
}

func (d *memDriver) Classify(err error) Kind { return KindOf(err) }

func (d *memDriver) Close() error { return nil }
