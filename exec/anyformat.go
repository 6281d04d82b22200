package exec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// A scan of objects that are not Parquet: Arrow IPC files and streams,
// CSV and JSON lines, each object's format told by its first bytes (see
// format.Sniff). They are read whole, in key order, and the scan's
// --columns and --filter apply to the rows read; there are no row groups
// to skip.

// openObjects is the source of the objects pattern names in st (the URL
// u), which scan.Open did not read as Parquet (parquetErr says why: no
// Parquet file there, or one that is not).
func openObjects(ctx context.Context, e *env, st *store.Store, pattern, u string, opts ScanOptions, parquetErr error) (Source, error) {
	objs, err := scan.Objects(ctx, st, pattern)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("scan: nothing to read at %s: %w", u, store.ErrNotFound)
	}
	if len(opts.Dict) > 0 {
		return nil, invalidf("scan: --dict reads Parquet string columns as dictionaries; %s holds no Parquet", u)
	}
	var opens []func() (Source, error)
	for _, o := range objs {
		if o.Size == 0 {
			return nil, fmt.Errorf("scan: %s is empty: no format to read", st.URL(o.Key))
		}
		f, err := sniffObject(ctx, st, o)
		if err != nil {
			return nil, err
		}
		url := st.URL(o.Key)
		switch f {
		case format.Unknown:
			return nil, fmt.Errorf("scan: %s is not a format sluice reads (%s)", url, readable)
		case format.Parquet:
			if len(objs) == 1 || errors.Is(parquetErr, scan.ErrNotParquet) {
				// A Parquet dataset with a file scan.Open could not read.
				return nil, fmt.Errorf("scan: %w", parquetErr)
			}
			return nil, fmt.Errorf("scan: %s is Parquet among objects of other formats: scan each format on its own", url)
		}
		opens = append(opens, func() (Source, error) { return openAnyObject(ctx, e, st, o, f, url, opts) })
	}
	first, err := opens[0]()
	if err != nil {
		return nil, err
	}
	schema := first.Schema()
	c := &concatSources{schema: schema, cur: first}
	for i, open := range opens[1:] {
		c.parts = append(c.parts, func() (Source, error) {
			src, err := open()
			if err == nil && !src.Schema().Equal(schema) {
				src.Close()
				err = fmt.Errorf("scan: %s has schema %s, unlike the objects before it (%s)", st.URL(objs[i+1].Key), schemaString(src.Schema()), schemaString(schema))
			}
			return src, err
		})
	}
	return c, nil
}

const readable = "Parquet, Arrow IPC file or stream, CSV, JSON lines"

// sniffObject tells an object's format from its first bytes.
func sniffObject(ctx context.Context, st *store.Store, o store.ObjectInfo) (format.Format, error) {
	rc, _, err := st.ReadRange(ctx, o.Key, store.Range{Off: 0, Len: min(o.Size, format.SniffBytes)}, store.ReadOptions{IfMatch: o.ETag})
	if err != nil {
		return format.Unknown, err
	}
	defer rc.Close()
	head, err := io.ReadAll(rc)
	if err != nil {
		return format.Unknown, err
	}
	return format.Sniff(head, o.Key), nil
}

// openAnyObject reads one object of format f, with the scan's filter and
// columns applied.
func openAnyObject(ctx context.Context, e *env, st *store.Store, o store.ObjectInfo, f format.Format, url string, opts ScanOptions) (Source, error) {
	var src Source
	if f == format.IPCFile {
		ra := &objectReaderAt{ctx: ctx, st: st, o: o}
		fm, err := newFileMessages(ra, o.Size, e.mem)
		if err != nil {
			return nil, fmt.Errorf("scan: %s: %w", url, err)
		}
		rd, err := ipc.NewReaderFromMessageReader(fm, ipc.WithAllocator(e.mem))
		if err != nil {
			return nil, fmt.Errorf("scan: %s: broken Arrow IPC file: %w", url, err)
		}
		src = &ipcSource{rd: rd, name: url}
	} else {
		rc, _, err := st.ReadRange(ctx, o.Key, store.All(), store.ReadOptions{IfMatch: o.ETag})
		if err != nil {
			return nil, err
		}
		switch f {
		case format.IPCStream:
			mr := newMessageReader(rc, e.mem)
			rd, rerr := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(e.mem))
			if rerr != nil {
				err = fmt.Errorf("scan: %s: broken Arrow IPC stream: %w", url, rerr)
			} else {
				src = &ipcSource{rd: rd, name: url}
			}
		case format.CSV:
			src, err = openCSV(rc, url, e, CSVOptions{BatchRows: opts.BatchRows})
		case format.JSONLines:
			src, err = openJSONLines(rc, url, e, opts.BatchRows)
		}
		if err != nil {
			rc.Close()
			return nil, err
		}
		src = &closingSource{Source: src, c: rc}
	}
	var stages []Stage
	if opts.Filter != "" {
		fs, err := Filter(opts.Filter)
		if err != nil {
			src.Close()
			return nil, err
		}
		stages = append(stages, fs)
	}
	if opts.Columns != nil {
		stages = append(stages, Select(opts.Columns...))
	}
	if len(stages) == 0 {
		return src, nil
	}
	m := &mappedSource{Source: src, schema: src.Schema()}
	for _, st := range stages {
		pl, err := st.bind(e, m.schema)
		if err != nil {
			src.Close()
			return nil, fmt.Errorf("scan %s: %w", url, err)
		}
		m.mappers, m.schema = append(m.mappers, pl.mapper), pl.out
	}
	return m, nil
}

// objectReaderAt reads an object by ranges, all of one version.
type objectReaderAt struct {
	ctx context.Context
	st  *store.Store
	o   store.ObjectInfo
}

func (r *objectReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.o.Size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), r.o.Size-off)
	rc, _, err := r.st.ReadRange(r.ctx, r.o.Key, store.Range{Off: off, Len: n}, store.ReadOptions{IfMatch: r.o.ETag})
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	got, err := io.ReadFull(rc, p[:n])
	if err == nil && n < int64(len(p)) {
		err = io.EOF
	}
	return got, err
}

// closingSource closes c after its source.
type closingSource struct {
	Source
	c io.Closer
}

func (s *closingSource) Close() error {
	err := s.Source.Close()
	if cerr := s.c.Close(); err == nil {
		err = cerr
	}
	return err
}

// mappedSource applies per-batch stages (a filter, a projection) to its
// source's batches.
type mappedSource struct {
	Source
	schema  *arrow.Schema
	mappers []mapper
}

func (s *mappedSource) Schema() *arrow.Schema { return s.schema }

func (s *mappedSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		rec, err := s.Source.Next(ctx)
		if err != nil {
			return nil, err
		}
		out, err := mapAll(ctx, rec, s.mappers)
		rec.Release()
		if err != nil || out != nil {
			return out, err
		}
	}
}

// jsonSample is how many lines JSON lines' column types are inferred from.
const jsonSample = 1000

// openJSONLines reads JSON lines (one object a row): columns in the order
// keys first appear among the first lines, types inferred from their
// values (int64 when every number is whole, float64, bool, date32 for
// YYYY-MM-DD strings, timestamp for date-times, else string); null or a
// missing key is null. Nested objects and arrays are not read.
func openJSONLines(r io.Reader, name string, e *env, batchRows int) (Source, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	schema, err := inferJSONLines(br)
	if err != nil {
		return nil, fmt.Errorf("scan: %s: %w", name, err)
	}
	if batchRows <= 0 {
		batchRows = 64 << 10
	}
	rd := array.NewJSONReader(br, schema, array.WithAllocator(e.mem), array.WithChunk(batchRows))
	return &jsonSource{rd: rd, name: name}, nil
}

// inferJSONLines reads the columns and their types from the first lines,
// leaving br where it was.
func inferJSONLines(br *bufio.Reader) (*arrow.Schema, error) {
	peek, err := br.Peek(br.Size())
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	if len(peek) == br.Size() {
		if i := bytes.LastIndexByte(peek, '\n'); i >= 0 {
			peek = peek[:i+1]
		}
	}
	var names []string
	kinds := map[string]*jsonKind{}
	dec := json.NewDecoder(bytes.NewReader(peek))
	dec.UseNumber()
	for line := 1; line <= jsonSample; line++ {
		keys, row, err := readObject(dec)
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("JSON lines: row %d: %w", line, err)
		}
		for _, k := range keys {
			kd := kinds[k]
			if kd == nil {
				kd = &jsonKind{}
				kinds[k] = kd
				names = append(names, k)
			}
			if err := kd.see(row[k]); err != nil {
				return nil, fmt.Errorf("JSON lines: row %d, key %q: %w", line, k, err)
			}
		}
	}
	if len(names) == 0 {
		return nil, errors.New("JSON lines: no object to take the columns from")
	}
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: kinds[n].dataType(), Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// readObject reads one JSON object: its keys in the order written, and
// each key's value; io.EOF at the end of the input.
func readObject(dec *json.Decoder) ([]string, map[string]json.RawMessage, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("expected an object, found %v", t)
	}
	var keys []string
	row := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string) // inside an object, a key is a string
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := row[k]; !dup {
			keys = append(keys, k)
		}
		row[k] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, err
	}
	return keys, row, nil
}

// jsonKind is what the values of one key have been so far.
type jsonKind struct {
	ints, floats, bools, dates, times, strs bool
}

func (k *jsonKind) see(v json.RawMessage) error {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0 || string(v) == "null":
		return nil
	case v[0] == '{' || v[0] == '[':
		return errors.New("nested objects and arrays are not read")
	case string(v) == "true" || string(v) == "false":
		k.bools = true
	case v[0] == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		switch {
		case isDate(s):
			k.dates = true
		case isTimestamp(s):
			k.times = true
		default:
			k.strs = true
		}
	default:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			k.ints = true
		} else {
			k.floats = true
		}
	}
	return nil
}

func (k *jsonKind) dataType() arrow.DataType {
	one := func(only bool, others ...bool) bool {
		for _, o := range others {
			if o {
				return false
			}
		}
		return only
	}
	switch {
	case one(k.ints, k.floats, k.bools, k.dates, k.times, k.strs):
		return arrow.PrimitiveTypes.Int64
	case one(k.ints || k.floats, k.bools, k.dates, k.times, k.strs):
		return arrow.PrimitiveTypes.Float64
	case one(k.bools, k.ints, k.floats, k.dates, k.times, k.strs):
		return arrow.FixedWidthTypes.Boolean
	case one(k.dates, k.ints, k.floats, k.bools, k.times, k.strs):
		return arrow.FixedWidthTypes.Date32
	case one(k.times, k.ints, k.floats, k.bools, k.dates, k.strs):
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	}
	return arrow.BinaryTypes.String
}

func isDate(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

func isTimestamp(s string) bool {
	_, err := arrow.TimestampFromString(s, arrow.Microsecond)
	return err == nil && len(s) >= len("2006-01-02 15:04") && strings.ContainsAny(s[10:11], " T")
}

type jsonSource struct {
	rd   *array.JSONReader
	name string
}

func (s *jsonSource) Schema() *arrow.Schema { return s.rd.Schema() }

func (s *jsonSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.rd.Next() {
		rec := s.rd.RecordBatch()
		rec.Retain()
		return rec, nil
	}
	if err := s.rd.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	return nil, io.EOF
}

func (s *jsonSource) Close() error {
	s.rd.Release()
	return nil
}
