package exec

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/expr"
)

// columnReader is a stage that can say which of its input columns it
// reads, given the columns of its output that the stages after it read
// (nil: all of them). It returns nil when it needs every input column.
// Stages that do not implement it need every column, as sinks do.
type columnReader interface {
	readsColumns(out []string) []string
}

// usedColumns returns the columns of the source's batches that stages
// read, nil when they read them all (or cannot say): what a scan need not
// fetch is the rest. A stage that cannot say reads all of its input. Names are those the stages give; one the source
// lacks is for the stage that names it to report.
func usedColumns(stages []Stage) []string {
	var used []string // nil: all
	for i := len(stages) - 1; i >= 0; i-- {
		if r, ok := stages[i].(columnReader); ok {
			used = r.readsColumns(used)
		} else {
			used = nil
		}
	}
	return used
}

// PushColumns returns p with its scan told which columns the stages read
// (ScanOptions.Used), so that it fetches only those; p as it is when the
// source is not a scan or already knows.
func PushColumns(p Pipeline) Pipeline {
	p.Stages = pushIntoJoins(p.Stages)
	sc, ok := p.Source.(*scanStage)
	if !ok || sc.opts.Used != nil {
		return p
	}
	used := usedColumns(p.Stages)
	if used == nil {
		return p
	}
	c := *sc
	// Columns read as dictionaries must be read for --dict's check.
	for _, d := range sc.opts.Dict {
		used = union(used, d)
	}
	c.opts.Used = used
	p.Source = &c
	return p
}

// unknownSide says stages hold a join whose side is neither read yet nor
// ends in a select: what the join adds is not known, so columns named
// after it cannot be told from its left side's, and a scan before it
// told of them would read all of its columns. Such a side's pipeline
// finds what its scan reads itself, once its joins have read theirs
// (TPC-H Q7's customer scan read all 8 columns for 2, Q20's partsupp
// scan all 5 for 3).
func unknownSide(stages []Stage) bool {
	for _, st := range stages {
		js, ok := st.(*joinStage)
		if !ok || js.pre != nil || js.semi() && js.o.Where == "" {
			continue // a semi or anti join adds no column
		}
		if _, known := outputNames(js.other.Stages); !known {
			return true
		}
	}
	return false
}

// outputNames are the columns of what stages output, when their last
// stages say it without the input's schema: a select (of names or
// expressions) or an aggregation whose aggregates are named, perhaps
// followed by renames, or by stages that keep their input's columns;
// false otherwise.
func outputNames(stages []Stage) ([]string, bool) {
	var renames []*renameStage
	for i := len(stages) - 1; i >= 0; i-- {
		var names []string
		switch st := stages[i].(type) {
		case *renameStage:
			renames = append(renames, st)
			continue
		case *computeStage:
			if st.extend {
				return nil, false
			}
			for _, c := range st.cols {
				names = append(names, c.Name)
			}
		case *projectStage:
			if st.drop {
				return nil, false
			}
			names = slices.Clone(st.cols)
		case *aggStage:
			if !st.whole {
				names = slices.Clone(st.keys)
			}
			for _, a := range st.aggs {
				if a.name == "" { // named as the aggregate binds
					return nil, false
				}
				names = append(names, a.name)
			}
		case *filterStage, *sortStage, *topStage, *headStage, *zeroNullsStage:
			continue // the columns of the stage before
		default:
			return nil, false
		}
		for j := len(renames) - 1; j >= 0; j-- { // in pipeline order
			for k, n := range names {
				for _, p := range renames[j].pairs {
					if p[0] == n {
						names[k] = p[1]
						break
					}
				}
			}
		}
		return names, true
	}
	return nil, false
}

// union returns a with the names of b it lacks appended.
func union(a []string, b ...string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// exprColumns are the columns an expression's text reads; nil when it
// does not parse (the stage reports that when it binds).
func exprColumns(text string) ([]string, bool) {
	n, err := expr.Parse(text)
	if err != nil {
		return nil, false
	}
	return expr.ColumnNames(n), true
}

func sortColumns(keys []SortKey) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Column
	}
	return names
}

func (s *projectStage) readsColumns(out []string) []string {
	if s.drop {
		return out
	}
	return union([]string{}, s.cols...)
}

// select and extend read their expressions' columns (all of them: each
// is bound, whether read after or not) and the input columns they keep.
func (s *computeStage) readsColumns(out []string) []string {
	in := []string{}
	computed := map[string]bool{}
	for _, c := range s.cols {
		if c.Expr == "" {
			in = union(in, c.Name)
			continue
		}
		computed[c.Name] = true
		cols, ok := exprColumns(c.Expr)
		if !ok {
			return nil
		}
		in = union(in, cols...)
	}
	if !s.extend {
		return in
	}
	if out == nil {
		return nil
	}
	for _, name := range out {
		if !computed[name] {
			in = union(in, name)
		}
	}
	return in
}

func (s *renameStage) readsColumns(out []string) []string {
	if out == nil {
		return nil
	}
	in := []string{}
	for _, name := range out {
		for _, p := range s.pairs {
			if p[1] == name {
				name = p[0]
				break
			}
		}
		in = union(in, name)
	}
	return in
}

func (s *filterStage) readsColumns(out []string) []string {
	cols, ok := exprColumns(s.expr)
	if out == nil || !ok {
		return nil
	}
	return union(out, cols...)
}

func (s *headStage) readsColumns(out []string) []string { return out }

func (s *sortStage) readsColumns(out []string) []string {
	if out == nil {
		return nil
	}
	return union(out, sortColumns(s.keys)...)
}

func (s *topStage) readsColumns(out []string) []string {
	if out == nil {
		return nil
	}
	return union(out, sortColumns(s.keys)...)
}

func (s *shuffleStage) readsColumns(out []string) []string {
	if out == nil {
		return nil
	}
	return union(out, s.keys...)
}

// An aggregation reads its keys and its aggregates' arguments, whatever
// is read of its output.
func (s *aggStage) readsColumns([]string) []string {
	in := union([]string{}, s.keys...)
	for _, a := range s.aggs {
		if a.arg != nil {
			in = union(in, expr.ColumnNames(a.arg)...)
		}
	}
	return in
}

func (p *partialAggStage) readsColumns(out []string) []string { return p.s.readsColumns(out) }

// pushIntoJoins returns stages with each join's right side told which of
// its columns the join and the stages after it read, so that its scan
// fetches only those; stages itself when none can be told.
func pushIntoJoins(stages []Stage) []Stage {
	out := stages
	var used []string // nil: all
	for i := len(stages) - 1; i >= 0; i-- {
		if js, ok := stages[i].(*joinStage); ok {
			if n := js.withRightUsed(used); n != js {
				if &out[0] == &stages[0] {
					out = slices.Clone(stages)
				}
				out[i] = n
			}
		}
		if r, ok := stages[i].(columnReader); ok {
			used = r.readsColumns(used)
		} else {
			used = nil
		}
	}
	return out
}

// needs is the end of a pipeline that reads the named columns: what a
// join reads of its right side.
type needs []string

func (n needs) Name() string { return "needs" }
func (n needs) bind(*env, *arrow.Schema) (*bound, error) {
	return nil, invalidf("needs is not a stage")
}
func (n needs) readsColumns([]string) []string { return n }

// withRightUsed is the join with its right side reading only the columns
// the join needs of it when the stages after it read used (nil: all),
// or s itself.
func (s *joinStage) withRightUsed(used []string) *joinStage {
	if s.pre != nil || used == nil && !s.semi() || unknownSide(s.other.Stages) {
		return s
	}
	where, ok := exprColumns(s.o.Where)
	if s.o.Where != "" && !ok {
		return s
	}
	need := slices.Clone(s.o.Right)
	strip := func(names []string) {
		for _, n := range names {
			if s.o.Prefix == "" {
				need = union(need, n)
			} else if r, ok := strings.CutPrefix(n, s.o.Prefix); ok {
				need = union(need, r)
			}
		}
	}
	strip(where)
	if !s.semi() {
		strip(used)
	}
	other := PushColumns(Pipeline{Source: s.other.Source, Stages: append(slices.Clone(s.other.Stages), needs(need))})
	if other.Source == s.other.Source {
		return s
	}
	c := *s
	c.other = Pipeline{Source: other.Source, Stages: other.Stages[:len(other.Stages)-1]}
	return &c
}
