package exec

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Let adds a column name to every batch holding the one value other
// computes (one column, at most one row: none gives null), read once
// before the first batch: a scalar subquery.
func Let(name string, other Pipeline) Stage { return &letStage{name: name, other: other} }

type letStage struct {
	name  string
	other Pipeline
}

func (s *letStage) Name() string { return "let" }

// readsColumns: the stages after it read the column from the other side.
func (s *letStage) readsColumns(out []string) []string {
	if out == nil {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(out), func(n string) bool { return n == s.name })
}

func (s *letStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	js := &joinStage{other: s.other}
	right, err := js.otherSchema(e)
	if err != nil {
		return nil, fmt.Errorf("let %s: %w", s.name, err)
	}
	if right.NumFields() != 1 {
		return nil, invalidf("let %s: its pipeline gives %d columns (%s): it must give one", s.name, right.NumFields(), schemaString(right))
	}
	if in.HasField(s.name) {
		return nil, invalidf("let %s: the input already has a column %q", s.name, s.name)
	}
	f := right.Field(0)
	f.Name, f.Nullable = s.name, true
	f.Type = valueType(f.Type)
	md := in.Metadata()
	out := arrow.NewSchema(append(slices.Clone(in.Fields()), f), &md)
	l := &letter{s: s, e: e, out: out, field: f}
	return &bound{name: "let", out: out, mapper: l, done: l.release}, nil
}

type letter struct {
	s     *letStage
	e     *env
	out   *arrow.Schema
	field arrow.Field

	once  sync.Once
	err   error
	value scalar.Scalar
}

// read runs the other pipeline for its one value.
func (l *letter) read(ctx context.Context) error {
	side, err := readSide(ctx, l.e, l.s.other, JoinOptions{}, nil)
	if err != nil {
		return fmt.Errorf("let %s: %w", l.s.name, err)
	}
	defer side.release()
	var rows int64
	for _, b := range side.batches {
		rows += b.NumRows()
	}
	switch {
	case rows > 1:
		return fmt.Errorf("let %s: its pipeline gave %d rows: it must give at most one", l.s.name, rows)
	case rows == 0:
		l.value = scalar.MakeNullScalar(l.field.Type)
		return nil
	}
	for _, b := range side.batches {
		if b.NumRows() == 1 {
			l.value, err = scalar.GetScalar(b.Column(0), 0)
			return err
		}
	}
	return nil
}

func (l *letter) mapBatch(ctx context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	l.once.Do(func() { l.err = l.read(ctx) })
	if l.err != nil {
		return nil, l.err
	}
	col, err := scalar.MakeArrayFromScalar(l.value, int(in.NumRows()), l.e.mem)
	if err != nil {
		return nil, fmt.Errorf("let %s: %w", l.s.name, err)
	}
	defer col.Release()
	return array.NewRecordBatch(l.out, append(slices.Clone(in.Columns()), col), in.NumRows()), nil
}

func (l *letter) release() {
	if r, ok := l.value.(scalar.Releasable); ok {
		r.Release()
	}
}
