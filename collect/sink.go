package collect

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/store"
)

// Format is what a Sink writes.
type Format int

const (
	// IPCFile is the Arrow IPC file format (.arrow, .feather, .ipc),
	// written in arrival order with the footer in dataset order.
	IPCFile Format = iota
	// IPCStream is the Arrow IPC stream format (.arrows), batches in the
	// order they are written.
	IPCStream
	// Parquet is a snappy Parquet file (.parquet), rows in the order they
	// are written.
	Parquet
)

func (f Format) String() string {
	switch f {
	case IPCStream:
		return "Arrow IPC stream"
	case Parquet:
		return "Parquet"
	}
	return "Arrow IPC file"
}

// FormatOf chooses a format by a path's suffix.
func FormatOf(path string) (Format, error) {
	p := strings.ToLower(path)
	switch {
	case strings.HasSuffix(p, ".arrow"), strings.HasSuffix(p, ".feather"), strings.HasSuffix(p, ".ipc"):
		return IPCFile, nil
	case strings.HasSuffix(p, ".arrows"):
		return IPCStream, nil
	case strings.HasSuffix(p, ".parquet"), strings.HasSuffix(p, ".pq"):
		return Parquet, nil
	}
	return 0, fmt.Errorf("%s: cannot tell the format from the name (want .arrow, .arrows or .parquet)", path)
}

// Sink writes batches to one output in one format. Nothing is complete
// before Close returns nil; Abort (after any error) leaves nothing
// complete-looking behind.
type Sink interface {
	// Write writes a batch; the sink does not keep it.
	Write(Batch) error
	Close() error
	Abort()
}

// ParquetRowGroupRows is the most rows in a row group of a Parquet sink.
const ParquetRowGroupRows = 512 << 10

// NewSink starts writing schema in format f to w. For a Parquet or IPC
// stream sink, the batches must be written in the order wanted.
func NewSink(w io.Writer, f Format, schema *arrow.Schema, mem memory.Allocator) (Sink, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	cw := &cutWriter{w: w}
	switch f {
	case IPCFile:
		fw, err := NewFileWriter(cw, schema, mem)
		if err != nil {
			return nil, err
		}
		return &sink{cw: cw, write: func(b Batch) error { return fw.Write(b.RecordBatch, b.Pos) }, close: fw.Close}, nil
	case IPCStream:
		iw := ipc.NewWriter(cw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
		return &sink{cw: cw, write: func(b Batch) error { return iw.Write(b.RecordBatch) }, close: iw.Close}, nil
	case Parquet:
		props := parquet.NewWriterProperties(
			parquet.WithAllocator(mem),
			parquet.WithCompression(compress.Codecs.Snappy),
			parquet.WithMaxRowGroupLength(ParquetRowGroupRows),
		)
		pw, err := pqarrow.NewFileWriter(schema, cw, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
		if err != nil {
			return nil, fmt.Errorf("parquet writer: %w", err)
		}
		return &sink{cw: cw, write: func(b Batch) error { return pw.WriteBuffered(b.RecordBatch) }, close: pw.Close}, nil
	}
	return nil, fmt.Errorf("unknown format %d", f)
}

type sink struct {
	cw    *cutWriter
	write func(Batch) error
	close func() error
	done  bool
}

func (s *sink) Write(b Batch) error { return s.write(b) }

func (s *sink) Close() error {
	if s.done {
		return nil
	}
	s.done = true
	return s.close()
}

// Abort cuts the sink off its writer and then closes the format writer,
// so what it holds is released but no ending (no IPC end-of-stream
// marker, no footer) reaches the output: a reader of what was written
// sees a broken file, never a short one.
func (s *sink) Abort() {
	s.cw.cut = true
	if !s.done {
		s.done = true
		_ = s.close()
	}
}

// cutWriter passes writes through until it is cut, then drops them.
type cutWriter struct {
	w   io.Writer
	cut bool
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.cut {
		return len(p), nil
	}
	return c.w.Write(p)
}

// StoreSink is a Sink writing an object in a store: it is visible only
// once Close returns nil, and Abort leaves nothing behind.
type StoreSink struct {
	Sink
	w *store.Writer
}

// NewStoreSink starts writing key in st in format f.
func NewStoreSink(ctx context.Context, st *store.Store, key string, f Format, schema *arrow.Schema, mem memory.Allocator) (*StoreSink, error) {
	w, err := st.NewWriter(ctx, key, store.WriteOptions{})
	if err != nil {
		return nil, err
	}
	s, err := NewSink(w, f, schema, mem)
	if err != nil {
		_ = w.Abort()
		return nil, err
	}
	return &StoreSink{Sink: s, w: w}, nil
}

// Close completes the format and commits the object.
func (s *StoreSink) Close() error {
	if err := s.Sink.Close(); err != nil {
		_ = s.w.Abort()
		return err
	}
	return s.w.Close()
}

// Abort abandons the object.
func (s *StoreSink) Abort() {
	s.Sink.Abort()
	_ = s.w.Abort()
}

// WriteStream writes every batch of a stream to a sink and closes both.
// On any error, of the stream or the sink, the sink is aborted and the
// error returned: a sink is complete only when WriteStream returns nil.
func WriteStream(s *Stream, sink Sink) (err error) {
	defer func() {
		if err != nil {
			sink.Abort()
		}
	}()
	if err := Drain(s, sink.Write); err != nil {
		return err
	}
	return sink.Close()
}
