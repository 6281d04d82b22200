package exec

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/internal/arrowfile"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// Formats of objects read and written, by the key's suffix:
//
//	.parquet                 Parquet (written with snappy)
//	.arrow, .feather, .ipc   Arrow IPC file
//	.arrows                  Arrow IPC stream
//	.csv                     CSV with a header line
type format int

const (
	fmtUnknown format = iota
	fmtParquet
	fmtArrowFile
	fmtArrowStream
	fmtCSV
)

func formatOf(key string) format {
	k := strings.ToLower(key)
	switch {
	case strings.HasSuffix(k, ".parquet"):
		return fmtParquet
	case strings.HasSuffix(k, ".arrow"), strings.HasSuffix(k, ".feather"), strings.HasSuffix(k, ".ipc"):
		return fmtArrowFile
	case strings.HasSuffix(k, ".arrows"):
		return fmtArrowStream
	case strings.HasSuffix(k, ".csv"):
		return fmtCSV
	}
	return fmtUnknown
}

const formatsHelp = ".parquet, .arrow (or .feather, .ipc), .arrows or .csv"

// objectScanMemory is the scan budget of one Parquet object read as an
// input (merge may read many at once); a row group larger than it is
// still read, exceeding it by that much (see scan.Dataset.MinMemory).
const objectScanMemory = 64 << 20

// openObject reads one object as a source, in its format by suffix.
func openObject(ctx context.Context, e *env, st *store.Store, key string) (Source, error) {
	name := st.URL(key)
	switch formatOf(key) {
	case fmtParquet:
		// Through scan, as every Parquet read: one object, in dataset order.
		ds, err := scan.Open(ctx, st, key, scan.Options{Mem: e.mem, Ordered: true, Memory: objectScanMemory})
		if err != nil {
			return nil, err
		}
		return &scanSource{sc: ds.Scan(ctx), schema: ds.Schema(), url: name}, nil
	case fmtArrowFile:
		ra, err := st.NewReaderAt(ctx, key)
		if err != nil {
			return nil, err
		}
		fm, err := newFileMessages(ra, ra.Size(), e.mem)
		if err != nil {
			return nil, fmt.Errorf("%s: not an Arrow IPC file: %w", name, err)
		}
		rd, err := ipc.NewReaderFromMessageReader(fm, ipc.WithAllocator(e.mem))
		if err != nil { // the reader released fm
			return nil, fmt.Errorf("%s: not an Arrow IPC file: %w", name, err)
		}
		return &ipcSource{rd: rd, name: name}, nil
	case fmtArrowStream, fmtCSV:
		rc, _, err := st.ReadRange(ctx, key, store.Range{Off: 0, Len: -1}, store.ReadOptions{})
		if err != nil {
			return nil, err
		}
		var src Source
		if formatOf(key) == fmtCSV {
			src, err = openCSV(rc, name, e, CSVOptions{})
		} else {
			src, err = ipcSourceStage{r: rc}.open(ctx, e)
		}
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &closing{Source: src, c: rc}, nil
	}
	return nil, invalidf("%s: unknown format: name it %s", name, formatsHelp)
}

// objectWriter writes batches into one object in a format by suffix. The
// object is committed by close and discarded by abort.
type objectWriter struct {
	w     *store.Writer
	sink  *dropAfterError
	write func(arrow.RecordBatch) error
	// writeAt, for formats that can take batches out of order, writes
	// the batch whose ordinal in the stream is ord.
	writeAt func(rec arrow.RecordBatch, ord int64) error
	end     func() error // flushes the format's footer
	rows    int64
}

// dropAfterError keeps the first write error and drops every later byte,
// so the Parquet writer, which frees its buffers only on a clean close,
// never sees one.
type dropAfterError struct {
	w   io.Writer
	err error
}

func (d *dropAfterError) Write(p []byte) (int, error) {
	if d.err != nil {
		return len(p), nil
	}
	n, err := d.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	d.err = err
	return len(p), nil
}

func newObjectWriter(ctx context.Context, e *env, st *store.Store, key string, schema *arrow.Schema) (*objectWriter, error) {
	f := formatOf(key)
	if f == fmtUnknown {
		return nil, invalidf("%s: unknown format: name it %s", st.URL(key), formatsHelp)
	}
	w, err := st.NewWriter(ctx, key, store.WriteOptions{})
	if err != nil {
		return nil, err
	}
	ow := &objectWriter{w: w, sink: &dropAfterError{w: w}}
	switch f {
	case fmtParquet:
		props := parquet.NewWriterProperties(parquet.WithAllocator(e.mem), parquet.WithCompression(compress.Codecs.Snappy), parquet.WithStats(true))
		pw, err := pqarrow.NewFileWriter(schema, ow.sink, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(e.mem)))
		if err != nil {
			_ = w.Abort()
			return nil, err
		}
		ow.write, ow.end = pw.WriteBuffered, pw.Close
	case fmtArrowFile:
		// A file holds one dictionary per column; each row group's
		// differs, so dictionary columns are written as their values.
		vs, _ := valuesSchema(schema)
		// The footer lists batches by their ordinal in the stream, so
		// batches written as they finish read back in stream order.
		fw, err := arrowfile.NewWriter(ow.sink, vs, e.mem, cmp.Compare[int64])
		if err != nil {
			_ = w.Abort()
			return nil, err
		}
		var ord int64
		_, write := valuesWriter(e.mem, schema, func(rec arrow.RecordBatch) error { return fw.Write(rec, ord) })
		ow.writeAt = func(rec arrow.RecordBatch, o int64) error {
			ord = o
			return write(rec)
		}
		ow.write = func(rec arrow.RecordBatch) error { return ow.writeAt(rec, int64(fw.Batches())) }
		ow.end = fw.Close
	case fmtArrowStream:
		sw := ipc.NewWriter(ow.sink, ipc.WithSchema(schema), ipc.WithAllocator(e.mem))
		ow.write, ow.end = sw.Write, sw.Close
	case fmtCSV:
		vs, _ := valuesSchema(schema)
		cw := newCSVWriter(ow.sink, vs)
		_, write := valuesWriter(e.mem, schema, cw.Write)
		ow.write, ow.end = write, cw.Flush
	}
	return ow, nil
}

func (o *objectWriter) writeBatch(rec arrow.RecordBatch) error {
	return o.checked(rec, func() error { return o.write(rec) })
}

// writeBatchAt writes the batch at ordinal ord of the stream, which may
// come before batches with lower ordinals; only formats with writeAt.
func (o *objectWriter) writeBatchAt(rec arrow.RecordBatch, ord int64) error {
	return o.checked(rec, func() error { return o.writeAt(rec, ord) })
}

func (o *objectWriter) checked(rec arrow.RecordBatch, write func() error) error {
	if o.sink.err != nil {
		return o.sink.err
	}
	o.rows += rec.NumRows()
	if err := write(); err != nil {
		return err
	}
	return o.sink.err
}

// close ends the format and commits the object.
func (o *objectWriter) close() error {
	err := o.end()
	if err == nil {
		err = o.sink.err
	}
	if err != nil {
		_ = o.w.Abort()
		return err
	}
	return o.w.Close()
}

// abort frees the format's buffers and discards the object.
func (o *objectWriter) abort() {
	if o.sink.err == nil {
		o.sink.err = errAborted
	}
	_ = o.end()
	_ = o.w.Abort()
}

var errAborted = fmt.Errorf("aborted")

// Write is a sink that writes the stream into one object, in the format
// its name ends with (.parquet, .arrow, .arrows, .csv). The object
// appears only when the whole pipeline succeeded.
func Write(url string) Stage { return &writeStage{url: url} }

type writeStage struct{ url string }

func (s *writeStage) Name() string { return "write" }
func (s *writeStage) isSink()      {}

func (s *writeStage) bind(e *env, in *arrow.Schema) (*plan, error) {
	if formatOf(s.url) == fmtUnknown {
		return nil, invalidf("write: %s: unknown format: name it %s", s.url, formatsHelp)
	}
	return &plan{name: "write", newOp: func(operator) (operator, error) {
		return &writeOp{url: s.url, e: e, schema: in}, nil
	}}, nil
}

type writeOp struct {
	url    string
	e      *env
	schema *arrow.Schema
	st     *store.Store
	ow     *objectWriter
}

func (o *writeOp) start(ctx context.Context) error {
	if o.ow != nil {
		return nil
	}
	st, key, err := o.e.open(ctx, o.url)
	if err != nil {
		return err
	}
	if key == "" || strings.HasSuffix(key, "/") {
		return invalidf("write: %s names no object", o.url)
	}
	o.st = st
	ow, err := newObjectWriter(ctx, o.e, st, key, o.schema)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	o.ow = ow
	return nil
}

func (o *writeOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	if err := o.start(ctx); err != nil {
		return err
	}
	if err := o.ow.writeBatch(rec); err != nil {
		return fmt.Errorf("write: %s: %w", o.url, err)
	}
	return nil
}

// takesAnyOrder: an Arrow IPC file lists its batches in its footer, so
// it can store them as they come and list them in stream order.
func (o *writeOp) takesAnyOrder() bool { return formatOf(o.url) == fmtArrowFile }

func (o *writeOp) pushAt(ctx context.Context, rec arrow.RecordBatch, ord int64) error {
	if err := o.start(ctx); err != nil {
		return err
	}
	if err := o.ow.writeBatchAt(rec, ord); err != nil {
		return fmt.Errorf("write: %s: %w", o.url, err)
	}
	return nil
}

func (o *writeOp) finish(ctx context.Context) error {
	if err := o.start(ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ow := o.ow
	o.ow = nil
	if err := ow.close(); err != nil {
		return fmt.Errorf("write: %s: %w", o.url, err)
	}
	return nil
}

func (o *writeOp) release() {
	if o.ow != nil {
		o.ow.abort()
		o.ow = nil
	}
}

// bytesSource is for tests: an IPC stream held in memory.
func bytesSource(b []byte) SourceStage { return ReadIPC(bytes.NewReader(b)) }
