package exec

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	acsv "github.com/apache/arrow-go/v18/arrow/csv"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/store"
)

// CSVOptions configure FromCSV.
type CSVOptions struct {
	// Types names the type of some columns (int64, float64, bool, date32,
	// timestamp, string); the others are inferred.
	Types map[string]string
	// BatchRows is the most rows in a batch; zero means 64Ki.
	BatchRows int
}

// csvSample is how many lines column types are inferred from.
const csvSample = 1000

// FromCSV is a source that reads CSV with a header line from each URL in
// turn, or from r when there are none. Column types are inferred from
// the first lines: int64 if every value is an integer, else float64 if
// every value is a number, else bool, date32 (YYYY-MM-DD), timestamp
// (YYYY-MM-DD HH:MM:SS), else string; an empty value is null. Every URL
// must have the same header and types.
func FromCSV(urls []string, r io.Reader, opts CSVOptions) SourceStage {
	return &csvStage{urls: urls, r: r, opts: opts}
}

type csvStage struct {
	urls []string
	r    io.Reader
	opts CSVOptions
}

func (s *csvStage) Name() string { return "from-csv" }

func (s *csvStage) open(ctx context.Context, e *env) (Source, error) {
	if len(s.urls) == 0 {
		if s.r == nil {
			return nil, invalidf("from-csv: no input")
		}
		return openCSV(s.r, "input", e, s.opts)
	}
	return &concatSource{ctx: ctx, e: e, urls: s.urls, opts: s.opts}, nil
}

// concatSource reads CSV objects one after another.
type concatSource struct {
	ctx    context.Context
	e      *env
	urls   []string
	opts   CSVOptions
	i      int
	cur    Source
	rc     io.Closer
	schema *arrow.Schema
	// err is the first object's open error when Schema met it: Schema
	// cannot return it, so Next does, before anything else.
	err error
}

func (s *concatSource) openNext() error {
	u := s.urls[s.i]
	s.i++
	st, key, err := s.e.open(s.ctx, u)
	if err != nil {
		return err
	}
	rc, _, err := st.ReadRange(s.ctx, key, store.All(), store.ReadOptions{})
	if err != nil {
		return err
	}
	src, err := openCSV(rc, u, s.e, s.opts)
	if err != nil {
		rc.Close()
		return err
	}
	if s.schema != nil && !s.schema.Equal(src.Schema()) {
		src.Close()
		rc.Close()
		return fmt.Errorf("from-csv: %s has columns %s, unlike the input before it (%s)", u, schemaString(src.Schema()), schemaString(s.schema))
	}
	s.schema, s.cur, s.rc = src.Schema(), src, rc
	return nil
}

func (s *concatSource) Schema() *arrow.Schema {
	if s.schema == nil && s.i == 0 {
		s.err = s.openNext()
	}
	if s.schema == nil {
		return arrow.NewSchema(nil, nil)
	}
	return s.schema
}

func (s *concatSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.err != nil {
		return nil, s.err
	}
	for {
		if s.cur == nil {
			if s.i >= len(s.urls) {
				return nil, io.EOF
			}
			if err := s.openNext(); err != nil {
				return nil, err
			}
		}
		rec, err := s.cur.Next(ctx)
		if err != io.EOF {
			return rec, err
		}
		s.closeCur()
	}
}

func (s *concatSource) closeCur() {
	if s.cur != nil {
		s.cur.Close()
		s.rc.Close()
		s.cur, s.rc = nil, nil
	}
}

func (s *concatSource) Close() error {
	s.closeCur()
	return nil
}

func openCSV(r io.Reader, name string, e *env, opts CSVOptions) (Source, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	schema, err := inferCSV(br, opts)
	if err != nil {
		return nil, fmt.Errorf("from-csv: %s: %w", name, err)
	}
	batch := opts.BatchRows
	if batch <= 0 {
		batch = 64 << 10
	}
	rd := acsv.NewReader(br, schema, acsv.WithHeader(true), acsv.WithChunk(batch),
		acsv.WithAllocator(e.mem), acsv.WithNullReader(true, ""))
	return &csvSource{rd: rd, name: name}, nil
}

// inferCSV reads the header and types from the first lines, leaving br
// where it was.
func inferCSV(br *bufio.Reader, opts CSVOptions) (*arrow.Schema, error) {
	peek, err := br.Peek(br.Size())
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	if kind := binaryKind(peek); kind != "" {
		return nil, fmt.Errorf("this is %s, not CSV", kind)
	}
	// Only whole lines of the peeked bytes, unless that is all there is.
	if len(peek) == br.Size() {
		if i := strings.LastIndexByte(string(peek), '\n'); i >= 0 {
			peek = peek[:i+1]
		}
	}
	cr := csv.NewReader(strings.NewReader(string(peek)))
	cr.ReuseRecord = false
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("empty: no header line")
	}
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for len(rows) < csvSample {
		rec, err := cr.Read()
		if err != nil {
			break
		}
		rows = append(rows, rec)
	}
	fields := make([]arrow.Field, len(header))
	for c, name := range header {
		dt, err := csvType(name, opts.Types, rows, c)
		if err != nil {
			return nil, err
		}
		fields[c] = arrow.Field{Name: name, Type: dt, Nullable: true}
	}
	for name := range opts.Types {
		found := false
		for _, h := range header {
			found = found || h == name
		}
		if !found {
			return nil, invalidf("from-csv: no column %q in the header (%s)", name, strings.Join(header, ", "))
		}
	}
	return arrow.NewSchema(fields, nil), nil
}

var csvTypes = map[string]arrow.DataType{
	"int64":     arrow.PrimitiveTypes.Int64,
	"float64":   arrow.PrimitiveTypes.Float64,
	"bool":      arrow.FixedWidthTypes.Boolean,
	"date32":    arrow.FixedWidthTypes.Date32,
	"date":      arrow.FixedWidthTypes.Date32,
	"timestamp": arrow.FixedWidthTypes.Timestamp_us,
	"string":    arrow.BinaryTypes.String,
}

func csvType(name string, given map[string]string, rows [][]string, c int) (arrow.DataType, error) {
	if t, ok := given[name]; ok {
		dt, ok := csvTypes[t]
		if !ok {
			return nil, invalidf("from-csv: unknown type %q for column %q (int64, float64, bool, date32, timestamp, string)", t, name)
		}
		return dt, nil
	}
	all := func(ok func(string) bool) bool {
		any := false
		for _, r := range rows {
			if c >= len(r) || r[c] == "" {
				continue
			}
			if !ok(r[c]) {
				return false
			}
			any = true
		}
		return any
	}
	switch {
	case all(func(s string) bool { _, err := strconv.ParseInt(s, 10, 64); return err == nil }):
		return arrow.PrimitiveTypes.Int64, nil
	case all(func(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }):
		return arrow.PrimitiveTypes.Float64, nil
	case all(func(s string) bool { _, err := strconv.ParseBool(s); return err == nil && !isDigits(s) }):
		return arrow.FixedWidthTypes.Boolean, nil
	case all(func(s string) bool { _, err := time.Parse("2006-01-02", s); return err == nil }):
		return arrow.FixedWidthTypes.Date32, nil
	case all(func(s string) bool {
		_, err := time.Parse("2006-01-02 15:04:05.999999", s)
		if err != nil {
			_, err = time.Parse("2006-01-02T15:04:05.999999", s)
		}
		return err == nil
	}):
		return arrow.FixedWidthTypes.Timestamp_us, nil
	case all(func(s string) bool {
		// UTC, as sluice's own CSV and JSON lines write timestamps of a zone.
		_, err := time.Parse("2006-01-02 15:04:05.999999Z", s)
		if err != nil {
			_, err = time.Parse("2006-01-02T15:04:05.999999Z", s)
		}
		return err == nil
	}):
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	}
	return arrow.BinaryTypes.String, nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

type csvSource struct {
	rd   *acsv.Reader
	name string
}

func (s *csvSource) Schema() *arrow.Schema { return s.rd.Schema() }

func (s *csvSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.rd.Next() {
		rec := s.rd.RecordBatch()
		rec.Retain()
		return rec, nil
	}
	if err := s.rd.Err(); err != nil {
		return nil, fmt.Errorf("from-csv: %s: %w", s.name, err)
	}
	return nil, io.EOF
}

func (s *csvSource) Close() error {
	s.rd.Release()
	return nil
}

// ToCSV is a sink that writes the stream as CSV with a header line
// (package format's CSV).
func ToCSV(w io.Writer) Stage { return &toCSVStage{w: w} }

type toCSVStage struct{ w io.Writer }

func (s *toCSVStage) Name() string { return "to-csv" }
func (s *toCSVStage) isSink()      {}

func (s *toCSVStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	if err := format.CSV.Check(in); err != nil {
		return nil, invalidf("to-csv: %v", err)
	}
	return &bound{name: "to-csv", newOp: func(operator) (operator, error) {
		w, err := format.NewWriter(s.w, format.CSV, in, e.mem)
		if err != nil {
			return nil, err
		}
		return &toCSVOp{w: w}, nil
	}}, nil
}

type toCSVOp struct{ w *format.Writer }

func (o *toCSVOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	if err := o.w.Write(rec); err != nil {
		return fmt.Errorf("to-csv: %w", err)
	}
	return nil
}

func (o *toCSVOp) finish(ctx context.Context) error {
	w := o.w
	o.w = nil
	if err := w.Close(); err != nil {
		return fmt.Errorf("to-csv: %w", err)
	}
	return nil
}

func (o *toCSVOp) release() {
	if o.w != nil {
		o.w.Abort()
	}
}

func fieldNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

// binaryKind names the columnar format data starts with, or "": such
// input read as CSV would give a table of garbage instead of an error.
func binaryKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("PAR1")):
		return "a Parquet file (read it with scan)"
	case bytes.HasPrefix(head, []byte("ARROW1")):
		return "an Arrow IPC file"
	case bytes.HasPrefix(head, []byte{0xff, 0xff, 0xff, 0xff}):
		return "an Arrow IPC stream"
	}
	return ""
}
