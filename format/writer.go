package format

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/compute/exec"
	acsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowfile"
)

// ParquetRowGroupRows is the most rows in a row group of a Parquet
// output by default: small enough that a filter can skip row groups of a
// sorted output, large enough that a column chunk is worth one ranged
// read.
const ParquetRowGroupRows = 1 << 20

// Options qualify a writer; the zero value is the defaults. Only Parquet
// takes any.
type Options struct {
	// Compression of Parquet pages: one of Compressions ("": snappy).
	Compression string
	// RowGroupRows is the most rows in a Parquet row group (0:
	// ParquetRowGroupRows).
	RowGroupRows int64
	// RowGroupBytes, when above zero, also ends a Parquet row group once
	// the Arrow bytes given to it reach this much. A row group is held in
	// memory, encoded, until it ends: this bounds what the writer holds
	// (about RowGroupBytes, less what compression saves, plus a batch a
	// column queued for its encoder).
	RowGroupBytes int64
	// DictPageBytes bounds a Parquet column's dictionary in a row group
	// (0: arrow-go's 1 MiB); past it the column falls back to plain
	// encoding. The encoder's hash table of the values seen grows with
	// it, several times the dictionary's size for fixed-width columns,
	// so a tight memory budget wants it small.
	DictPageBytes int64
	// Encoders is how many columns of a Parquet row group are encoded at
	// once (0: GOMAXPROCS; 1: on the caller's goroutine, by arrow-go's
	// own writer, as are schemas with nested columns).
	Encoders int
	// UploadMemory bounds what an object made by Create buffers for its
	// upload: the parts in flight and the one filling
	// (store.WriteOptions.Memory; 0: the store's default).
	UploadMemory int64
}

func (o Options) rowGroupRows() int64 {
	if o.RowGroupRows > 0 {
		return o.RowGroupRows
	}
	return ParquetRowGroupRows
}

// Check says whether the options are valid, before anything is written.
func (o Options) Check() error {
	if o.RowGroupRows < 0 || o.RowGroupBytes < 0 || o.DictPageBytes < 0 || o.Encoders < 0 || o.UploadMemory < 0 {
		return errors.New("row-group size, encoders and upload memory must not be negative")
	}
	return CheckCompression(o.Compression)
}

// bufSize is the buffer in front of the underlying writer: the many small
// writes of encoding one batch reach it as few large ones. It is flushed
// after every batch, so what a Write encoded is in the output when it
// returns (a consumer of a stream sees each batch at once, and nothing is
// held back for a batch still to come).
const bufSize = 1 << 20

// Key is a batch's place in the order an Arrow IPC file's footer lists
// its batches (WriteAt): keys compare element by element, a shorter
// prefix first.
type Key []int64

// ErrOrder is returned by WriteAt on a format that cannot reorder.
var ErrOrder = errors.New("only an Arrow IPC file can take batches out of order")

// Writer writes batches in one format to an io.Writer. It is used from
// one goroutine and does not keep the batches it is given. The output is
// complete only when Close returns nil; call Abort after any error.
type Writer struct {
	f      Format
	schema *arrow.Schema
	out    *guard
	buf    *bufio.Writer
	mem    memory.Allocator
	write  func(rec arrow.RecordBatch, key Key) error
	end    func() error  // writes the format's ending (footer, marker)
	abort  func()        // frees the encoder's buffers; nil: end does
	decode *arrow.Schema // non-nil: dictionary columns written as values
	seq    int64
	rows   int64
	done   bool
}

// NewWriter starts writing schema in format f to w. mem allocates what
// encoding needs (nil: memory.DefaultAllocator). A schema that f cannot
// hold (nested columns in CSV) is an error here, before anything is
// written.
func NewWriter(w io.Writer, f Format, schema *arrow.Schema, mem memory.Allocator) (*Writer, error) {
	return NewWriterOptions(w, f, schema, mem, Options{})
}

// NewWriterOptions is NewWriter with options.
func NewWriterOptions(w io.Writer, f Format, schema *arrow.Schema, mem memory.Allocator, o Options) (*Writer, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	g := &guard{w: w}
	wr := &Writer{f: f, schema: schema, out: g, buf: bufio.NewWriterSize(g, bufSize), mem: mem}
	switch f {
	case IPCFile:
		vs := wr.valuesSchema(schema)
		fw, err := arrowfile.NewWriter(wr.buf, vs, mem, func(a, b Key) int { return slices.Compare(a, b) })
		if err != nil {
			return nil, err
		}
		wr.write, wr.end = fw.Write, fw.Close
	case IPCStream:
		sw := ipc.NewWriter(wr.buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
		wr.write = func(rec arrow.RecordBatch, _ Key) error { return sw.Write(rec) }
		wr.end = sw.Close
	case Parquet:
		write, end, abort, err := newParquet(wr.buf, schema, mem, o)
		if err != nil {
			return nil, fmt.Errorf("parquet: %w", err)
		}
		wr.write = func(rec arrow.RecordBatch, _ Key) error { return write(rec) }
		wr.end, wr.abort = end, abort
	case CSV:
		if err := f.Check(schema); err != nil {
			return nil, err
		}
		cw := acsv.NewWriter(wr.buf, wr.valuesSchema(schema), acsv.WithHeader(true), acsv.WithNullWriter(""))
		wr.write = func(rec arrow.RecordBatch, _ Key) error { return cw.Write(rec) }
		// An empty output still has its header line: the CSV writer
		// writes it once, at its first Write, empty batch or not.
		wr.end = func() error {
			vs := wr.decodeOr(schema)
			cols := emptyColumns(mem, vs)
			empty := array.NewRecordBatch(vs, cols, 0)
			for _, c := range cols {
				c.Release()
			}
			err := cw.Write(empty)
			empty.Release()
			if err != nil {
				return err
			}
			return cw.Flush()
		}
	case JSONLines:
		jw := newJSONWriter(wr.buf, schema)
		wr.write = func(rec arrow.RecordBatch, _ Key) error { return jw.write(rec) }
		wr.end = func() error { return nil }
	default:
		return nil, fmt.Errorf("%w %d", ErrUnknown, int(f))
	}
	return wr, nil
}

// Format is what the writer writes.
func (w *Writer) Format() Format { return w.f }

// Rows is the number of rows written so far.
func (w *Writer) Rows() int64 { return w.rows }

// Write appends rec. For an Arrow IPC file its place in the footer is
// after every batch written before it.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	w.seq++
	return w.writeKey(rec, Key{w.seq})
}

// WriteAt writes rec, which an Arrow IPC file's footer lists by key (see
// Key; batches of equal keys in the order written). Only an IPCFile
// writer takes it; mix it with Write only if the keys are {n}, n > 0.
func (w *Writer) WriteAt(rec arrow.RecordBatch, key Key) error {
	if !w.f.Ordered() {
		return ErrOrder
	}
	return w.writeKey(rec, key)
}

func (w *Writer) writeKey(rec arrow.RecordBatch, key Key) error {
	if w.done {
		return errors.New("format: write after Close or Abort")
	}
	if w.out.err != nil {
		return w.out.err
	}
	// arrow-go's encoders index columns by the schema they started with.
	if !rec.Schema().Equal(w.schema) {
		return fmt.Errorf("format: a batch of schema %v in an output of schema %v", rec.Schema(), w.schema)
	}
	if w.decode != nil {
		vals, err := decodeDicts(w.mem, w.decode, rec)
		if err != nil {
			return err
		}
		defer vals.Release()
		rec = vals
	}
	w.rows += rec.NumRows()
	if err := w.write(rec, key); err != nil {
		return err
	}
	if err := w.buf.Flush(); err != nil {
		return err
	}
	return w.out.err
}

// Close writes the format's ending and flushes everything to the
// underlying writer, which it does not close. After an error of a write
// it only frees what the encoder holds and returns that error.
func (w *Writer) Close() error {
	if w.done {
		return errors.New("format: Close after Close or Abort")
	}
	w.done = true
	err := w.end()
	if w.out.err != nil {
		return w.out.err
	}
	if err != nil {
		return err
	}
	if err := w.buf.Flush(); err != nil {
		return err
	}
	return w.out.err
}

// Abort frees what the encoder holds and writes nothing more: neither
// what is buffered nor the format's ending reaches the underlying
// writer. It does nothing after Close.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.out.cut = true
	if w.abort != nil {
		w.abort()
		return
	}
	_ = w.end()
}

// valuesSchema is schema with dictionary columns as their value types;
// the writer decodes dictionaries when they differ.
func (w *Writer) valuesSchema(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	has := false
	for i, f := range fields {
		if d, ok := f.Type.(*arrow.DictionaryType); ok {
			fields[i].Type, has = d.ValueType, true
		}
	}
	if !has {
		return s
	}
	md := s.Metadata()
	w.decode = arrow.NewSchema(fields, &md)
	return w.decode
}

func (w *Writer) decodeOr(s *arrow.Schema) *arrow.Schema {
	if w.decode != nil {
		return w.decode
	}
	return s
}

// decodeDicts returns rec with its dictionary columns replaced by their
// values; the caller releases it.
func decodeDicts(mem memory.Allocator, schema *arrow.Schema, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	ec := compute.DefaultExecCtx()
	ec.NumParallel = 1
	ctx := compute.SetExecCtx(exec.WithAllocator(context.Background(), mem), ec)
	for i, c := range rec.Columns() {
		d, ok := c.(*array.Dictionary)
		if !ok {
			c.Retain()
			cols[i] = c
			continue
		}
		v, err := compute.TakeArrayOpts(ctx, d.Dictionary(), d.Indices(), compute.TakeOptions{BoundsCheck: false})
		if err != nil {
			return nil, err
		}
		cols[i] = v
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
}

func emptyColumns(mem memory.Allocator, s *arrow.Schema) []arrow.Array {
	cols := make([]arrow.Array, s.NumFields())
	for i, f := range s.Fields() {
		cols[i] = array.MakeArrayOfNull(mem, f.Type, 0)
	}
	return cols
}

// Check says whether f can hold schema: CSV cannot hold nested columns.
func (f Format) Check(schema *arrow.Schema) error {
	if f != CSV {
		return nil
	}
	for _, fd := range schema.Fields() {
		if !csvWritable(fd.Type) {
			return fmt.Errorf("column %q has type %s, which CSV cannot hold", fd.Name, fd.Type)
		}
	}
	return nil
}

func csvWritable(dt arrow.DataType) bool {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		dt = d.ValueType
	}
	switch dt.ID() {
	case arrow.LIST, arrow.LARGE_LIST, arrow.STRUCT, arrow.MAP, arrow.FIXED_SIZE_LIST, arrow.SPARSE_UNION, arrow.DENSE_UNION,
		arrow.LIST_VIEW, arrow.LARGE_LIST_VIEW, arrow.RUN_END_ENCODED:
		return false
	}
	return true
}

// jsonWriter writes a row a line, keys in column order (arrow-go's
// RecordToJSON goes through a map, which sorts them).
type jsonWriter struct {
	w    io.Writer
	keys [][]byte // `"name":` for each column, the first with the `{`
	line []byte
}

func newJSONWriter(w io.Writer, schema *arrow.Schema) *jsonWriter {
	jw := &jsonWriter{w: w}
	for i, f := range schema.Fields() {
		k, _ := json.Marshal(f.Name) // a string always marshals
		sep := ","
		if i == 0 {
			sep = "{"
		}
		jw.keys = append(jw.keys, append(append([]byte(sep), k...), ':'))
	}
	return jw
}

func (j *jsonWriter) write(rec arrow.RecordBatch) error {
	cols := rec.Columns()
	for r := 0; r < int(rec.NumRows()); r++ {
		j.line = j.line[:0]
		if len(cols) == 0 {
			j.line = append(j.line, '{')
		}
		for c, col := range cols {
			j.line = append(j.line, j.keys[c]...)
			if d, ok := col.(*array.Decimal128); ok && d.IsValid(r) {
				// A number with every digit of its scale, as DuckDB writes
				// one (arrow-go's is a string, trailing zeros dropped).
				j.line = append(j.line, d.Value(r).ToString(d.DataType().(*arrow.Decimal128Type).Scale)...)
				continue
			}
			v, err := json.Marshal(col.GetOneForMarshal(r))
			if err != nil {
				return fmt.Errorf("column %q row %d: %w", rec.ColumnName(c), r, err)
			}
			j.line = append(j.line, v...)
		}
		j.line = append(j.line, '}', '\n')
		if _, err := j.w.Write(j.line); err != nil {
			return err
		}
	}
	return nil
}

// guard keeps the first error of the underlying writer and drops every
// later byte, and every byte once cut: encoders (Parquet's frees its
// buffers only on a clean close) never see an error, and an aborted
// output gets no ending.
type guard struct {
	w   io.Writer
	err error
	cut bool
}

func (g *guard) Write(p []byte) (int, error) {
	if g.err != nil || g.cut {
		return len(p), nil
	}
	n, err := g.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	g.err = err
	return len(p), nil
}
