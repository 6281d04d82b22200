package collect

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowfile"
)

// FileWriter writes an Arrow IPC file whose batches are stored in the
// order they are written (arrival order) and listed in its footer in Pos
// order, so that any Arrow reader (which reads the batches the footer
// lists, in its order) sees dataset order. Nothing is held back: each
// batch goes to w as it is written; only the footer, some 24 bytes a
// batch, waits for Close.
//
// A FileWriter is used from one goroutine. A file is complete only after
// Close returns nil: on an error, abort whatever w writes to (a
// store.Writer's Abort) so nothing complete-looking is left.
type FileWriter struct {
	w *arrowfile.Writer[Pos]
}

// NewFileWriter starts an IPC file of schema on w. mem allocates what
// encoding needs (nil: memory.DefaultAllocator).
func NewFileWriter(w io.Writer, schema *arrow.Schema, mem memory.Allocator) (*FileWriter, error) {
	aw, err := arrowfile.NewWriter(w, schema, mem, Pos.Compare)
	if err != nil {
		return nil, err
	}
	return &FileWriter{w: aw}, nil
}

// Write appends a batch; pos is where it belongs in dataset order. The
// writer does not keep rec.
func (f *FileWriter) Write(rec arrow.RecordBatch, pos Pos) error { return f.w.Write(rec, pos) }

// Batches is the number of batches written so far.
func (f *FileWriter) Batches() int { return f.w.Batches() }

// Close writes the footer, listing the batches in Pos order (batches at
// the same position keep the order they were written in). It does not
// close the underlying writer.
func (f *FileWriter) Close() error { return f.w.Close() }
