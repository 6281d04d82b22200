package arrowfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Writer writes one Arrow IPC file. Nothing is held back: each batch
// goes to the underlying writer as it is written; only the footer, some
// 24 bytes a batch, waits for Close.
//
// A Writer is used from one goroutine. A file is complete only after
// Close returns nil: on an error, abort whatever the underlying writer
// writes to so nothing complete-looking is left.
type Writer[K any] struct {
	w      *tailWriter
	fw     *ipc.FileWriter
	cmp    func(a, b K) int
	keys   []K
	closed bool
	err    error
}

// NewWriter starts an IPC file of schema on w whose footer will list the
// batches by their keys as cmp orders them. mem allocates what encoding
// needs (nil: memory.DefaultAllocator).
func NewWriter[K any](w io.Writer, schema *arrow.Schema, mem memory.Allocator, cmp func(a, b K) int) (*Writer[K], error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	tw := &tailWriter{w: w}
	fw, err := ipc.NewFileWriter(tw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	return &Writer[K]{w: tw, fw: fw, cmp: cmp}, nil
}

// Write appends rec, whose place in the footer is key. The writer does
// not keep rec.
func (f *Writer[K]) Write(rec arrow.RecordBatch, key K) error {
	if f.err != nil {
		return f.err
	}
	if f.closed {
		return errors.New("arrowfile: write to a closed Writer")
	}
	if err := f.fw.Write(rec); err != nil {
		f.err = err
		return err
	}
	f.keys = append(f.keys, key)
	return nil
}

// Batches is the number of batches written so far.
func (f *Writer[K]) Batches() int { return len(f.keys) }

// Close writes the footer, listing the batches in key order (batches
// with equal keys keep the order they were written in). After an earlier
// error it only frees what the encoder holds and returns that error. It
// does not close the underlying writer.
func (f *Writer[K]) Close() error {
	if f.closed {
		return f.err
	}
	f.closed = true
	// Everything ipc.FileWriter writes from here on (the end-of-stream
	// marker, the footer, its length and the magic) is held back, so the
	// footer's block list can be put in key order before it is written.
	f.w.hold = true
	if err := f.fw.Close(); err != nil && f.err == nil {
		f.err = err
	}
	if f.err != nil {
		return f.err
	}
	order := make([]int, len(f.keys))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return f.cmp(f.keys[a], f.keys[b]) })
	tail := f.w.held.Bytes()
	if err := permuteFooter(tail, order); err != nil {
		f.err = fmt.Errorf("arrowfile: IPC file footer: %w", err)
		return f.err
	}
	if _, err := f.w.w.Write(tail); err != nil {
		f.err = err
		return err
	}
	return nil
}

// tailWriter passes writes through until hold is set, then keeps them.
type tailWriter struct {
	w    io.Writer
	hold bool
	held bytes.Buffer
}

func (t *tailWriter) Write(p []byte) (int, error) {
	if t.hold {
		return t.held.Write(p)
	}
	return t.w.Write(p)
}
