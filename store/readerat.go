package store

import (
	"context"
	"fmt"
	"io"
)

// ReaderAt serves io.ReaderAt over one object version: every ReadAt is a
// ranged read pinned to the ETag seen at open, so a concurrent overwrite
// gives ErrPrecondition instead of a torn read. It is safe for concurrent
// use and keeps no reference to p, so it plugs into io.SectionReader and
// the Parquet reader. Each ReadAt is one request: for many small reads,
// fetch ranges ahead instead.
type ReaderAt struct {
	ctx  context.Context
	s    *Store
	info ObjectInfo
}

// NewReaderAt stats key and returns a ReaderAt pinned to its current version.
func (s *Store) NewReaderAt(ctx context.Context, key string) (*ReaderAt, error) {
	info, err := s.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	return &ReaderAt{ctx: ctx, s: s, info: info}, nil
}

// Size is the object's size.
func (r *ReaderAt) Size() int64 { return r.info.Size }

// Info is the pinned object version.
func (r *ReaderAt) Info() ObjectInfo { return r.info }

// ReadAt implements io.ReaderAt.
func (r *ReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset", r.s.URL(r.info.Key))
	}
	if off >= r.info.Size {
		return 0, io.EOF
	}
	want := int64(len(p))
	if want == 0 {
		return 0, nil
	}
	short := false
	if off+want > r.info.Size {
		want = r.info.Size - off
		short = true
	}
	rc, _, err := r.s.ReadRange(r.ctx, r.info.Key, Range{Off: off, Len: want}, ReadOptions{IfMatch: r.info.ETag})
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p[:want])
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return n, &Error{Op: "read", URL: r.s.URL(r.info.Key), Kind: KindRetryable, Err: fmt.Errorf("short body: %d of %d bytes", n, want)}
	}
	if err != nil {
		return n, err
	}
	if short {
		return n, io.EOF
	}
	return n, nil
}
