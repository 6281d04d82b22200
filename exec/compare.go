package exec

import (
	"cmp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/expr"
)

// SortKey is a column to order by. Nulls come last in either direction,
// as in DuckDB (NULLS LAST is its default), and NaN before every other
// float in ascending order.
type SortKey struct {
	Column string
	Desc   bool
}

// orderBy reads the sort key columns of batches for comparing rows.
type orderBy struct {
	idx   []int
	load  []func(arrow.Array) vec
	desc  []bool
	names []string
}

func newOrderBy(stage string, in *arrow.Schema, keys []SortKey) (*orderBy, error) {
	if len(keys) == 0 {
		return nil, invalidf("%s: no columns to order by (--by)", stage)
	}
	o := &orderBy{}
	for _, k := range keys {
		i, err := colIndex(stage, in, k.Column)
		if err != nil {
			return nil, err
		}
		dt := in.Field(i).Type
		_, load := expr.Loader(dt)
		if load == nil {
			return nil, invalidf("%s: column %q has type %s, which cannot be ordered", stage, k.Column, dt)
		}
		o.idx = append(o.idx, i)
		o.load = append(o.load, load)
		o.desc = append(o.desc, k.Desc)
		o.names = append(o.names, k.Column)
	}
	return o, nil
}

// keys reads a batch's key columns.
func (o *orderBy) keys(rec arrow.RecordBatch) []vec {
	vs := make([]vec, len(o.idx))
	for k, i := range o.idx {
		vs[k] = o.load[k](rec.Column(i))
	}
	return vs
}

// compare orders row i of a against row j of b.
func (o *orderBy) compare(a []vec, i int, b []vec, j int) int {
	for k := range a {
		if av, bv := a[k].IsValid(i), b[k].IsValid(j); av != bv {
			if av {
				return -1 // nulls last, whatever the direction
			}
			return 1
		}
		c := compareAt(a[k], i, b[k], j)
		if c != 0 {
			if o.desc[k] {
				return -c
			}
			return c
		}
	}
	return 0
}

// compareAt orders two values of which both or neither are null.
func compareAt(a vec, i int, b vec, j int) int {
	if !a.IsValid(i) {
		return 0
	}
	switch a.K {
	case kFloat:
		return expr.CompareFloats(a.F[i], b.F[j])
	case kDecimal:
		// Both of one column, so of one scale.
		return a.D[i].Cmp(b.D[j])
	case kString:
		return strings.Compare(a.S(i), b.S(j))
	case kBool:
		switch {
		case a.B[i] == b.B[j]:
			return 0
		case !a.B[i]:
			return -1
		}
		return 1
	}
	return cmp.Compare(a.I[i], b.I[j])
}
