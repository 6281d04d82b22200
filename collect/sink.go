package collect

import (
	"context"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/store"
)

// Sink writes batches to one output in one format. Nothing is complete
// before Close returns nil; Abort (after any error) leaves nothing
// complete-looking behind.
type Sink interface {
	// Write writes a batch; the sink does not keep it.
	Write(Batch) error
	Close() error
	Abort()
}

// OrderKey is a position as an Arrow IPC file's footer orders it (format.Key):
// dataset order.
func (p Pos) OrderKey() format.Key {
	return format.Key{int64(p.Part), int64(p.File), int64(p.RowGroup), int64(p.Batch)}
}

// NewSink starts writing schema in format f to w (package format). An
// Arrow IPC file stores the batches as they come and lists them in Pos
// order; every other format writes them in the order given.
func NewSink(w io.Writer, f format.Format, schema *arrow.Schema, mem memory.Allocator) (Sink, error) {
	fw, err := format.NewWriter(w, f, schema, mem)
	if err != nil {
		return nil, err
	}
	return sink{fw}, nil
}

type sink struct{ w *format.Writer }

func (s sink) Write(b Batch) error { return write(s.w, b) }
func (s sink) Close() error        { return s.w.Close() }
func (s sink) Abort()              { s.w.Abort() }

func write(w *format.Writer, b Batch) error {
	if w.Format().Ordered() {
		return w.WriteAt(b.RecordBatch, b.Pos.OrderKey())
	}
	return w.Write(b.RecordBatch)
}

// StoreSink is a Sink writing an object in a store: it is visible only
// once Close returns nil, and Abort leaves nothing behind.
type StoreSink struct{ o *format.Object }

// NewStoreSink starts writing key in st in format f.
func NewStoreSink(ctx context.Context, st *store.Store, key string, f format.Format, schema *arrow.Schema, mem memory.Allocator) (*StoreSink, error) {
	o, err := format.Create(ctx, st, key, f, schema, mem)
	if err != nil {
		return nil, err
	}
	return &StoreSink{o}, nil
}

// Write writes a batch; the sink does not keep it.
func (s *StoreSink) Write(b Batch) error { return write(s.o.Writer, b) }

// Close completes the format and commits the object.
func (s *StoreSink) Close() error { return s.o.Close() }

// Abort abandons the object.
func (s *StoreSink) Abort() { s.o.Abort() }

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
