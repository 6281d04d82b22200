package exec

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Select keeps the named columns, in the order given.
func Select(cols ...string) Stage { return &projectStage{name: "select", cols: cols} }

// Drop removes the named columns and keeps the rest in order.
func Drop(cols ...string) Stage { return &projectStage{name: "drop", cols: cols, drop: true} }

type projectStage struct {
	name string
	cols []string
	drop bool
}

func (s *projectStage) Name() string { return s.name }

func (s *projectStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	if len(s.cols) == 0 {
		return nil, invalidf("%s: no columns given", s.name)
	}
	var idx []int
	named := map[int]bool{}
	for _, c := range s.cols {
		i, err := colIndex(s.name, in, c)
		if err != nil {
			return nil, err
		}
		if named[i] {
			return nil, invalidf("%s: column %q named twice", s.name, c)
		}
		named[i] = true
		idx = append(idx, i)
	}
	if s.drop {
		idx = idx[:0]
		for i := range in.NumFields() {
			if !named[i] {
				idx = append(idx, i)
			}
		}
	}
	fields := make([]arrow.Field, len(idx))
	for k, i := range idx {
		fields[k] = in.Field(i)
	}
	md := in.Metadata()
	out := arrow.NewSchema(fields, &md)
	return &bound{name: s.name, out: out, mapper: &projector{out: out, idx: idx}}, nil
}

type projector struct {
	out *arrow.Schema
	idx []int
}

func (p *projector) mapBatch(_ context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(p.idx))
	for k, i := range p.idx {
		cols[k] = in.Column(i)
	}
	return array.NewRecordBatch(p.out, cols, in.NumRows()), nil
}

// Rename renames columns: each pair is {old, new}. Columns keep their
// place and type.
func Rename(pairs ...[2]string) Stage { return &renameStage{pairs: pairs} }

type renameStage struct{ pairs [][2]string }

func (s *renameStage) Name() string { return "rename" }

func (s *renameStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	if len(s.pairs) == 0 {
		return nil, invalidf("rename: nothing to rename (use old=new)")
	}
	fields := append([]arrow.Field(nil), in.Fields()...)
	for _, p := range s.pairs {
		if strings.TrimSpace(p[1]) == "" {
			return nil, invalidf("rename: empty new name for %q", p[0])
		}
		i, err := colIndex("rename", in, p[0])
		if err != nil {
			return nil, err
		}
		fields[i].Name = p[1]
	}
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.Name] {
			return nil, invalidf("rename: two columns would be named %q", f.Name)
		}
		seen[f.Name] = true
	}
	md := in.Metadata()
	out := arrow.NewSchema(fields, &md)
	idx := make([]int, len(fields))
	for i := range idx {
		idx[i] = i
	}
	return &bound{name: "rename", out: out, mapper: &projector{out: out, idx: idx}}, nil
}
