package exec

import (
	"cmp"
	"math"
	"slices"
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

// perm is the order of the n rows of keys kv (read by o.keys) that
// compare gives, rows of equal keys in their order. One or two integer
// keys without nulls (an aggregation's groups by part and supplier, by
// order) are sorted as values beside their row: compare's calls cost
// TPC-H Q20 a fifth of its time in sorting 0.8 M groups.
func (o *orderBy) perm(kv []vec, n int) []int32 {
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	if ks := o.intKeys(kv, n); ks != nil {
		sign := func(k int) int64 {
			if o.desc[k] {
				return -1
			}
			return 1
		}
		// Negating orders a descending key but for the smallest int64,
		// whose negation is itself: those keys take compare's way.
		for _, k := range ks {
			if slices.Contains(k, math.MinInt64) {
				ks = nil
				break
			}
		}
		if len(ks) > 0 && sortedInts(ks, sign(0), len(ks) > 1 && sign(1) < 0) {
			return perm
		}
		switch len(ks) {
		case 1:
			type row struct {
				a int64
				i int32
			}
			rows := make([]row, n)
			s := sign(0)
			for i := range rows {
				rows[i] = row{s * ks[0][i], int32(i)}
			}
			slices.SortFunc(rows, func(x, y row) int {
				if c := cmp.Compare(x.a, y.a); c != 0 {
					return c
				}
				return cmp.Compare(x.i, y.i)
			})
			for i, r := range rows {
				perm[i] = r.i
			}
			return perm
		case 2:
			type row struct {
				a, b int64
				i    int32
			}
			rows := make([]row, n)
			s0, s1 := sign(0), sign(1)
			for i := range rows {
				rows[i] = row{s0 * ks[0][i], s1 * ks[1][i], int32(i)}
			}
			slices.SortFunc(rows, func(x, y row) int {
				if c := cmp.Compare(x.a, y.a); c != 0 {
					return c
				}
				if c := cmp.Compare(x.b, y.b); c != 0 {
					return c
				}
				return cmp.Compare(x.i, y.i)
			})
			for i, r := range rows {
				perm[i] = r.i
			}
			return perm
		}
	}
	slices.SortStableFunc(perm, func(a, b int32) int { return o.compare(kv, int(a), kv, int(b)) })
	return perm
}

// sortedInts says the rows of one or two integer keys ks are in order
// already, the first key's values times s0, the second's descending when
// desc1: an aggregation's groups come in the order their keys are first
// seen, which for input sorted by its keys (lineitem by order, TPC-H Q18's
// 1.5 M groups) is the order wanted, and checking costs a pass where
// sorting cost a tenth of the query.
func sortedInts(ks [][]int64, s0 int64, desc1 bool) bool {
	a := ks[0]
	for i := 1; i < len(a); i++ {
		if x, y := s0*a[i-1], s0*a[i]; x != y || len(ks) == 1 {
			if x > y {
				return false
			}
			continue
		}
		b0, b1 := ks[1][i-1], ks[1][i]
		if desc1 {
			b0, b1 = -b0, -b1
		}
		if b0 > b1 {
			return false
		}
	}
	return true
}

// intKeys are the values of keys kv that compareAt compares as integers,
// when there are one or two, with no null among their n rows; else nil.
func (o *orderBy) intKeys(kv []vec, n int) [][]int64 {
	if len(kv) == 0 || len(kv) > 2 {
		return nil
	}
	var ks [][]int64
	for _, v := range kv {
		switch v.K {
		case kFloat, kDecimal, kString, kBool:
			return nil
		}
		if v.Const || v.Valid != nil || len(v.I) < n {
			return nil
		}
		ks = append(ks, v.I[:n])
	}
	return ks
}
