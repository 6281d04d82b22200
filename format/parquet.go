package format

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/internal/arrowsize"
)

// Compressions are the names Options.Compression takes, the default
// first.
var Compressions = []string{"snappy", "zstd", "gzip", "lz4", "none"}

func parseCompression(name string) (compress.Compression, error) {
	switch strings.ToLower(name) {
	case "", "snappy":
		return compress.Codecs.Snappy, nil
	case "zstd":
		return compress.Codecs.Zstd, nil
	case "gzip":
		return compress.Codecs.Gzip, nil
	case "lz4":
		return compress.Codecs.Lz4Raw, nil
	case "none", "uncompressed":
		return compress.Codecs.Uncompressed, nil
	}
	return 0, fmt.Errorf("unknown compression %q (want %s)", name, strings.Join(Compressions, ", "))
}

// CheckCompression says whether name is one of Compressions, for a flag
// checked before anything is read.
func CheckCompression(name string) error {
	_, err := parseCompression(name)
	return err
}

// parquetProperties is the one set of Parquet writer properties: the
// options' compression and row-group length, statistics, the Arrow
// schema stored. Dictionary encoding is arrow-go's default: a column
// starts dictionary-encoded and falls back to plain in the same pass
// once its dictionary outgrows a page, so neither it nor the statistics
// (kept per page as values go by) need a second pass over the data.
func parquetProperties(mem memory.Allocator, o Options) (*parquet.WriterProperties, pqarrow.ArrowWriterProperties, error) {
	codec, err := parseCompression(o.Compression)
	if err != nil {
		return nil, pqarrow.ArrowWriterProperties{}, err
	}
	props := []parquet.WriterProperty{
		parquet.WithAllocator(mem),
		parquet.WithCompression(codec),
		parquet.WithStats(true),
		parquet.WithMaxRowGroupLength(o.rowGroupRows()),
	}
	if o.DictPageBytes > 0 {
		props = append(props, parquet.WithDictionaryPageSizeLimit(o.DictPageBytes))
	}
	return parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(
		pqarrow.WithStoreSchema(),
		pqarrow.WithAllocator(mem),
	), nil
}

// queued is how many batches a column's encoder may be behind the
// writer: enough that a column slower on one batch catches up on the
// next without holding the others, few enough that little is held.
const queued = 2

// pqWriter writes Parquet with each column of a row group encoded by a
// goroutine of its own, so the columns of a batch are encoded at once
// (on as many cores as there are) while the caller makes the next batch.
// A row group is buffered (arrow-go's buffered row group: every column
// chunk in memory) and flushed to the output, in column order, when it is
// full: at RowGroupRows rows, or once the Arrow bytes given to it reach
// RowGroupBytes.
//
// arrow-go leaves only flat columns to its public API (nested ones need
// its unexported level builder), so a schema with a nested column is
// written by pqarrow.FileWriter on one goroutine instead (see newParquet).
// The definition levels here are those pqarrow computes for a flat
// column, and the bytes written are the same as its buffered writer's
// for the same batches and row-group length.
type pqWriter struct {
	fw       *file.Writer
	rgw      file.BufferedRowGroupWriter
	maxRows  int64
	maxBytes int64
	rgRows   int64
	rgBytes  int64
	cols     []*colEncoder
	pending  sync.WaitGroup // jobs not yet done
	mu       sync.Mutex
	err      error // the first encoding error
	stopped  bool
	sem      chan struct{} // encoders at work
}

// colEncoder encodes one column, batch after batch, in the order given.
type colEncoder struct {
	w        *pqWriter
	nullable bool
	ctx      context.Context // arrow-go's write context: its buffers are the column's own
	jobs     chan colJob
	defs     []int16
	done     chan struct{}
}

type colJob struct {
	arr arrow.Array
	cw  file.ColumnChunkWriter
}

// flatSchema says whether every column of s is a leaf of Parquet's
// schema: no lists, structs, maps, unions or extension types.
func flatSchema(s *arrow.Schema) bool {
	for _, f := range s.Fields() {
		dt := f.Type
		if d, ok := dt.(*arrow.DictionaryType); ok {
			dt = d.ValueType
		}
		if _, nested := dt.(arrow.NestedType); nested {
			return false
		}
		switch dt.ID() {
		case arrow.EXTENSION, arrow.RUN_END_ENCODED, arrow.DICTIONARY:
			return false
		}
	}
	return true
}

// newParquet starts a Parquet file on out and returns its write and end.
func newParquet(out io.Writer, schema *arrow.Schema, mem memory.Allocator, o Options) (write func(arrow.RecordBatch) error, end func() error, abort func(), err error) {
	props, aprops, err := parquetProperties(mem, o)
	if err != nil {
		return nil, nil, nil, err
	}
	if !flatSchema(schema) || o.Encoders == 1 {
		pw, err := pqarrow.NewFileWriter(schema, out, props, aprops)
		if err != nil {
			return nil, nil, nil, err
		}
		return pw.WriteBuffered, pw.Close, func() { _ = pw.Close() }, nil
	}
	w, err := newPQWriter(out, schema, props, aprops, o)
	if err != nil {
		return nil, nil, nil, err
	}
	return w.write, w.close, w.abort, nil
}

func newPQWriter(out io.Writer, schema *arrow.Schema, props *parquet.WriterProperties, aprops pqarrow.ArrowWriterProperties, o Options) (*pqWriter, error) {
	// As pqarrow.NewFileWriter does: the schema's metadata, and the Arrow
	// schema itself (flat, so no list names to normalise).
	pqschema, err := pqarrow.ToParquet(schema, props, aprops)
	if err != nil {
		return nil, err
	}
	meta := make(metadata.KeyValueMetadata, 0)
	md := schema.Metadata()
	for i := range md.Len() {
		meta.Append(md.Keys()[i], md.Values()[i])
	}
	meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(schema, props.Allocator())))
	fw, err := file.NewParquetWriterWithError(out, pqschema.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	if err != nil {
		return nil, err
	}
	enc := o.Encoders
	if enc <= 0 {
		enc = runtime.GOMAXPROCS(0)
	}
	w := &pqWriter{fw: fw, maxRows: props.MaxRowGroupLength(), maxBytes: o.RowGroupBytes, sem: make(chan struct{}, enc)}
	for _, f := range schema.Fields() {
		c := &colEncoder{
			w:        w,
			nullable: f.Nullable,
			ctx:      pqarrow.NewArrowWriteContext(context.Background(), &aprops),
			jobs:     make(chan colJob, queued),
			done:     make(chan struct{}),
		}
		w.cols = append(w.cols, c)
		go c.run()
	}
	return w, nil
}

func (w *pqWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *pqWriter) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

// write hands rec's columns to the encoders, starting a new row group
// where the current one is full, as pqarrow's WriteBuffered does.
func (w *pqWriter) write(rec arrow.RecordBatch) error {
	if err := w.failed(); err != nil {
		return err
	}
	n := rec.NumRows()
	if w.rgw == nil {
		if err := w.newRowGroup(); err != nil {
			return err
		}
	}
	for off := int64(0); ; {
		full := w.rgRows >= w.maxRows || (w.maxBytes > 0 && w.rgBytes >= w.maxBytes && w.rgRows > 0)
		if off < n && full {
			if err := w.newRowGroup(); err != nil {
				return err
			}
		}
		k := min(n-off, w.maxRows-w.rgRows)
		part := rec
		if off > 0 || k < n {
			part = rec.NewSlice(off, off+k)
		}
		err := w.enqueue(part)
		if part != rec {
			part.Release()
		}
		if err != nil {
			return err
		}
		off += k
		if off >= n {
			return w.failed()
		}
	}
}

func (w *pqWriter) enqueue(rec arrow.RecordBatch) error {
	w.rgRows += rec.NumRows()
	w.rgBytes += arrowsize.Record(rec)
	for i, c := range w.cols {
		cw, err := w.rgw.Column(i)
		if err != nil {
			return err
		}
		arr := rec.Column(i)
		arr.Retain()
		w.pending.Add(1)
		c.jobs <- colJob{arr: arr, cw: cw}
	}
	return nil
}

// newRowGroup waits for the encoders to finish the current row group,
// which then goes to the output, and starts the next.
func (w *pqWriter) newRowGroup() error {
	w.pending.Wait()
	if err := w.failed(); err != nil {
		return err
	}
	rgw, err := w.fw.AppendBufferedRowGroupChecked()
	if err != nil {
		return err
	}
	w.rgw, w.rgRows, w.rgBytes = rgw, 0, 0
	return nil
}

// stop ends the encoders once they have done what they were given.
func (w *pqWriter) stop() {
	if w.stopped {
		return
	}
	w.stopped = true
	for _, c := range w.cols {
		close(c.jobs)
	}
	for _, c := range w.cols {
		<-c.done
	}
}

func (w *pqWriter) close() error {
	w.stop()
	if err := w.failed(); err != nil {
		w.abortFile()
		return err
	}
	return w.fw.Close()
}

// abort stops the encoders, dropping what they still have queued, and
// frees what the row group holds; the output is cut off by the caller.
func (w *pqWriter) abort() {
	w.fail(errAborted)
	w.stop()
	w.abortFile()
}

var errAborted = fmt.Errorf("format: aborted")

// abortFile frees the file's buffers. Columns may hold different row
// counts (jobs dropped), which the row group's Close refuses before it
// frees anything: close each column first.
func (w *pqWriter) abortFile() {
	if w.rgw != nil {
		for i := range w.cols {
			if cw, err := w.rgw.Column(i); err == nil && cw != nil {
				_ = cw.Close()
			}
		}
	}
	_ = w.fw.Close()
}

func (c *colEncoder) run() {
	defer close(c.done)
	for j := range c.jobs {
		if c.w.failed() == nil {
			c.w.sem <- struct{}{}
			err := c.encode(j)
			<-c.w.sem
			if err != nil {
				c.w.fail(err)
			}
		}
		j.arr.Release()
		c.w.pending.Done()
	}
}

// encode writes arr to the column chunk with the definition levels
// pqarrow's level builder gives a flat column: none for a required
// column; for an optional one 1 where a value is present, 0 where null.
func (c *colEncoder) encode(j colJob) error {
	arr := j.arr
	var defs []int16
	leafNullable := false
	if c.nullable {
		n := arr.Len()
		if cap(c.defs) < n {
			c.defs = make([]int16, n)
		}
		defs = c.defs[:n]
		nulls := arr.NullN()
		switch {
		case nulls == 0:
			for i := range defs {
				defs[i] = 1
			}
		case nulls == n:
			clear(defs)
			leafNullable = true
		default:
			for i := range defs {
				if arr.IsValid(i) {
					defs[i] = 1
				} else {
					defs[i] = 0
				}
			}
			leafNullable = true
		}
	}
	if arr.Len() == 0 {
		return nil
	}
	return pqarrow.WriteArrowToColumn(c.ctx, j.cw, arr, defs, nil, leafNullable)
}
