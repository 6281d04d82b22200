package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluice-data/sluice/format"
)

// programInput is the sink of the stages before a program: its standard
// input, in dataset order (no positions, as no program knows them).
type programInput struct {
	ps *programStage
	pr *process
}

func (s *programInput) Name() string { return "exec" }
func (s *programInput) isSink()      {}

func (s *programInput) bind(e *env, in *arrow.Schema) (*bound, error) {
	f := s.ps.format(s.ps.o.In)
	if f != format.IPCStream {
		// Checked here so a schema CSV cannot hold fails before the
		// program sees a byte.
		w, err := format.NewWriter(io.Discard, f, in, e.mem)
		if err != nil {
			return nil, invalidf("%s --in %s: %v", s.pr.label, f, err)
		}
		w.Abort()
	}
	return &bound{name: "exec", newOp: func(operator) (operator, error) {
		op := &programSink{pr: s.pr}
		if f == format.IPCStream {
			sw := newStreamWriter(s.pr.stdin, in, streamOptions{Mem: e.mem, HandOff: e.handOff})
			op.write, op.close, op.abort = sw.Write, sw.Close, sw.Abort
			return op, nil
		}
		w, err := format.NewWriter(s.pr.stdin, f, in, e.mem)
		if err != nil {
			return nil, err
		}
		op.write, op.close, op.abort = w.Write, w.Close, w.Abort
		return op, nil
	}}, nil
}

type programSink struct {
	pr    *process
	write func(arrow.RecordBatch) error
	close func() error
	abort func()
	done  bool
}

// stopped makes a write to a program that stopped reading (closed its
// standard input, or exited) the end of the input, not a failure: the
// program's exit says whether it failed.
func stopped(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return errEnough
	}
	return err
}

func (s *programSink) push(ctx context.Context, rec arrow.RecordBatch) error {
	return stopped(s.write(rec))
}

func (s *programSink) finish(ctx context.Context) error {
	s.done = true
	err := stopped(s.close())
	s.pr.closeStdin()
	return err
}

func (s *programSink) release() {
	if !s.done {
		s.abort()
	}
	s.pr.closeStdin()
}

// programOutput is the source of the stages after a program: what it
// writes on its standard output.
type programOutput struct {
	ps    *programStage
	pr    *process
	src   Source
	ended bool // the output was read to its end
}

func (s *programOutput) Name() string { return "exec" }

func (s *programOutput) open(ctx context.Context, e *env) (Source, error) {
	name := s.pr.label + ": output"
	var src Source
	var err error
	schema := s.ps.o.Schema
	switch s.ps.format(s.ps.o.Out) {
	case format.IPCStream:
		src, err = ipcSourceStage{r: s.pr.stdout, name: name}.open(ctx, e)
	case format.CSV:
		var types map[string]string
		if schema != nil {
			types = map[string]string{}
			for _, f := range schema.Fields() {
				types[f.Name] = csvTypeName(f.Type)
			}
		}
		src, err = openCSV(s.pr.stdout, "stdout", e, CSVOptions{Types: types})
	case format.JSONLines:
		if schema != nil {
			rd := array.NewJSONReader(bufio.NewReaderSize(s.pr.stdout, 1<<20), schema, array.WithAllocator(e.mem), array.WithChunk(64<<10))
			src = &jsonSource{rd: rd, name: name}
		} else {
			src, err = openJSONLines(s.pr.stdout, "stdout", e, 0)
		}
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), s.pr.label) {
			err = fmt.Errorf("%s: %w", name, err)
		}
		return nil, err
	}
	if schema != nil && !sameColumns(schema, src.Schema()) {
		src.Close()
		return nil, fmt.Errorf("%s: the program wrote columns (%s), not those of --schema (%s)", name, schemaString(src.Schema()), schemaString(schema))
	}
	s.src = src
	return s, nil
}

func (s *programOutput) Schema() *arrow.Schema { return s.src.Schema() }

func (s *programOutput) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := s.src.Next(ctx)
	switch {
	case err == io.EOF:
		s.ended = true
	case err != nil && !strings.HasPrefix(err.Error(), s.pr.label):
		err = fmt.Errorf("%s: output: %w", s.pr.label, err)
	}
	return rec, err
}

func (s *programOutput) Close() error { return s.src.Close() }

// sameColumns says a and b have the same column names and types, in order.
func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i, f := range a.Fields() {
		g := b.Field(i)
		if f.Name != g.Name || !arrow.TypeEqual(f.Type, g.Type) {
			return false
		}
	}
	return true
}

func csvTypeName(t arrow.DataType) string {
	for name, dt := range csvTypes {
		if name != "date" && arrow.TypeEqual(dt, t) {
			return name
		}
	}
	return "string"
}

// ColumnsSchema is the schema of columns named with from-csv's type
// names (plan.Exec's Schema), every column nullable.
func ColumnsSchema(names, types []string) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		dt, ok := csvTypes[types[i]]
		if !ok {
			return nil, invalidf("exec --schema %s=%s: unknown type", n, types[i])
		}
		fields[i] = arrow.Field{Name: n, Type: dt, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// firstProgram is the index of the first program among stages, or -1.
func firstProgram(stages []Stage) int {
	return slices.IndexFunc(stages, func(s Stage) bool { _, ok := s.(*programStage); return ok })
}
