package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// formatOf is the format of an object by its key's suffix (package
// format's one table); Unknown when it has none.
func formatOf(key string) format.Format {
	f, _ := format.Of(key)
	return f
}

var formatsHelp = format.SuffixHelp()

// objectScanMemory is the scan budget of one Parquet object read as an
// input (merge may read many at once); a row group larger than it is
// still read, exceeding it by that much (see scan.Dataset.MinMemory).
const objectScanMemory = 64 << 20

// openObject reads one object as a source, in its format by suffix.
func openObject(ctx context.Context, e *env, st *store.Store, key string) (Source, error) {
	name := st.URL(key)
	switch f := formatOf(key); f {
	case format.Parquet:
		// Through scan, as every Parquet read: one object, in dataset order.
		ds, err := scan.Open(ctx, st, key, scan.Options{Mem: e.mem, Ordered: true, Memory: objectScanMemory})
		if err != nil {
			return nil, err
		}
		return &scanSource{sc: ds.Scan(ctx), schema: ds.Schema(), url: name}, nil
	case format.IPCFile:
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
	case format.IPCStream, format.CSV:
		rc, _, err := st.ReadRange(ctx, key, store.Range{Off: 0, Len: -1}, store.ReadOptions{})
		if err != nil {
			return nil, err
		}
		var src Source
		if f == format.CSV {
			src, err = openCSV(rc, name, e, CSVOptions{})
		} else {
			src, err = readIPC(rc).open(ctx, e)
		}
		if err != nil {
			rc.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return &closingSource{Source: src, c: rc}, nil
	case format.JSONLines:
		return nil, invalidf("%s: JSON lines is an output format only: read .parquet, .arrow, .arrows or .csv", name)
	}
	return nil, invalidf("%s: unknown format: name it %s", name, formatsHelp)
}

// objectWriter writes batches into one object in a format by suffix
// (package format). The object is committed by close and discarded by
// abort.
type objectWriter struct {
	o    *format.Object
	rows int64
}

func newObjectWriter(ctx context.Context, e *env, st *store.Store, key string, schema *arrow.Schema) (*objectWriter, error) {
	return newObjectWriterFormat(ctx, e, st, key, formatOf(key), schema, format.Options{})
}

func newObjectWriterFormat(ctx context.Context, e *env, st *store.Store, key string, f format.Format, schema *arrow.Schema, fo format.Options) (*objectWriter, error) {
	if f == format.Unknown {
		return nil, invalidf("%s: unknown format: name it %s", st.URL(key), formatsHelp)
	}
	o, err := format.CreateOptions(ctx, st, key, f, schema, e.mem, fo)
	if err != nil {
		var se *store.Error
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, invalidf("%s: %v", st.URL(key), err)
	}
	return &objectWriter{o: o}, nil
}

func (o *objectWriter) writeBatch(rec arrow.RecordBatch) error {
	o.rows += rec.NumRows()
	return o.o.Write(rec)
}

// writeBatchAt writes the batch at key of the stream, which may come
// before batches with lower keys; only an Arrow IPC file.
func (o *objectWriter) writeBatchAt(rec arrow.RecordBatch, key []int64) error {
	o.rows += rec.NumRows()
	return o.o.WriteAt(rec, format.Key(key))
}

// close ends the format and commits the object.
func (o *objectWriter) close() error { return o.o.Close() }

// abort frees the format's buffers and discards the object.
func (o *objectWriter) abort() { o.o.Abort() }

// Write is a sink that writes the stream into one object, in the format
// its name ends with (package format: .parquet, .arrow, .arrows, .csv,
// .jsonl...). The object appears only when the whole pipeline succeeded.
func Write(url string) Stage { return &writeStage{url: url} }

// WriteFormat is Write in format f whatever the name.
func WriteFormat(url string, f format.Format) Stage { return &writeStage{url: url, f: f} }

// WriteOptions is WriteFormat with the format's options (Parquet's
// compression and row groups); f may be format.Unknown (by the name).
func WriteOptions(url string, f format.Format, o format.Options) Stage {
	return &writeStage{url: url, f: f, o: o}
}

type writeStage struct {
	url string
	f   format.Format
	o   format.Options
}

func (s *writeStage) Name() string { return "write" }
func (s *writeStage) isSink()      {}

func (s *writeStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	f := s.f
	if f == format.Unknown {
		var err error
		if f, err = format.Of(s.url); err != nil {
			return nil, invalidf("write: %s: unknown format: name it %s, or give --format", s.url, formatsHelp)
		}
	}
	if err := f.Check(in); err != nil {
		return nil, invalidf("write: %s: %v", s.url, err)
	}
	return &bound{name: "write", newOp: func(operator) (operator, error) {
		return &writeOp{url: s.url, f: f, o: s.o, e: e, schema: in}, nil
	}}, nil
}

type writeOp struct {
	url    string
	f      format.Format
	o      format.Options
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
	ow, err := newObjectWriterFormat(ctx, o.e, st, key, o.f, o.schema, o.o)
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
func (o *writeOp) takesAnyOrder() bool { return o.f.Ordered() }

func (o *writeOp) pushAt(ctx context.Context, rec arrow.RecordBatch, key []int64) error {
	if err := o.start(ctx); err != nil {
		return err
	}
	// The key has placed it: its position is not part of the file.
	rec = plain(rec)
	defer rec.Release()
	if err := o.ow.writeBatchAt(rec, key); err != nil {
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
