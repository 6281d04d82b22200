package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/internal/freelist"
)

// Computed is a column of select or extend: an input column kept by its
// Name (Expr empty), or the value of Expr named Name.
type Computed struct {
	Name string
	Expr string
}

// selectExprs keeps input columns and computed ones, in the order given.
func selectExprs(cols ...Computed) Stage { return &computeStage{name: "select", cols: cols} }

// Extend adds computed columns after the input's, or in the place of
// the input column of the same name, and keeps the rest.
func Extend(cols ...Computed) Stage { return &computeStage{name: "extend", cols: cols, extend: true} }

type computeStage struct {
	name   string
	cols   []Computed
	extend bool
}

func (s *computeStage) Name() string { return s.name }

// output is one column of the stage's output: input column in, or the
// value of e.
type output struct {
	in int
	e  *expr.Expr
}

func (s *computeStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	if len(s.cols) == 0 {
		return nil, invalidf("%s: no columns given", s.name)
	}
	var outs []output
	var fields []arrow.Field
	place := map[string]int{} // output index by name
	if s.extend {
		for i, f := range in.Fields() {
			place[f.Name] = i
			outs = append(outs, output{in: i})
			fields = append(fields, f)
		}
	}
	named := map[string]bool{}
	for _, c := range s.cols {
		if named[c.Name] {
			return nil, invalidf("%s: column %q named twice", s.name, c.Name)
		}
		named[c.Name] = true
		o, f := output{in: -1}, arrow.Field{Name: c.Name}
		if c.Expr == "" {
			i, err := colIndex(s.name, in, c.Name)
			if err != nil {
				return nil, err
			}
			o.in, f = i, in.Field(i)
		} else {
			n, err := expr.Parse(c.Expr)
			if err != nil {
				return nil, stageExprError(s.name, err)
			}
			if col, ok := n.(*expr.Column); ok {
				// A column renamed keeps its type (a dictionary, microseconds).
				i, err := colIndex(s.name, in, col.Name)
				if err != nil {
					return nil, err
				}
				o.in, f = i, in.Field(i)
				f.Name = c.Name
			} else {
				x, err := expr.Bind(c.Expr, n, in)
				if err != nil {
					return nil, stageExprError(s.name, err)
				}
				dt := x.DataType()
				if dt == nil {
					return nil, invalidf("%s: %s is %s, which a column cannot hold", s.name, c.Name, x.Kind.A())
				}
				o.e, f.Type, f.Nullable = x, dt, true
			}
		}
		if k, ok := place[c.Name]; ok {
			outs[k], fields[k] = o, f
			continue
		}
		place[c.Name] = len(outs)
		outs, fields = append(outs, o), append(fields, f)
	}
	md := in.Metadata()
	out := arrow.NewSchema(fields, &md)
	return &bound{name: s.name, out: out, mapper: &computer{name: s.name, out: out, outs: outs, mem: e.mem}}, nil
}

type computer struct {
	name    string
	out     *arrow.Schema
	outs    []output
	mem     memory.Allocator
	scratch freelist.List[expr.Scratch] // each worker's evaluation memory
}

func (c *computer) mapBatch(_ context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	sc := c.scratch.Get()
	defer c.scratch.Put(sc)
	n := int(in.NumRows())
	cols := make([]arrow.Array, len(c.outs))
	var made []arrow.Array
	defer func() {
		for _, a := range made {
			a.Release()
		}
	}()
	for k, o := range c.outs {
		if o.e == nil {
			cols[k] = in.Column(o.in)
			continue
		}
		// Each value is stored before the next evaluation reuses sc.
		v, err := o.e.EvalScratch(in, sc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		a := expr.Array(c.mem, v, n)
		made = append(made, a)
		cols[k] = a
	}
	return array.NewRecordBatch(c.out, cols, in.NumRows()), nil
}
