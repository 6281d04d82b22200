package exec

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/expr"
)

// maxInList is the most distinct keys a pruning condition lists one by
// one; with more it says their range.
const maxInList = 1024

// pruningJoin finds the first join among stages that keeps no left row
// without a match (inner, semi, right), reached through stages that keep
// the scan's column values as they are (filter, select, drop): its right
// side's keys say which row groups of the scan can hold a match.
func pruningJoin(stages []Stage) (int, *joinStage) {
	for i, st := range stages {
		switch s := st.(type) {
		case *filterStage, *projectStage:
			continue
		case *joinStage:
			if s.o.How == "inner" || s.o.How == "semi" || s.o.How == "right" {
				return i, s
			}
		}
		break
	}
	return -1, nil
}

// readJoinSides reads the right side of every join among stages before
// the run, so that each join knows before its first batch whether it
// fits its memory (and joins in memory) or not (and spills): the stages
// returned hold them, and release releases them after the run. cond is
// what the right side of the join at pruneAt says of the scan's rows
// ("" for nothing).
func readJoinSides(ctx context.Context, e *env, stages []Stage, pruneAt int) (out []Stage, cond string, release func(), err error) {
	var sides []*sideBatches
	release = func() {
		for _, s := range sides {
			s.release()
		}
	}
	out = slices.Clone(stages)
	left := 0
	for _, st := range stages {
		if js, ok := st.(*joinStage); ok && js.pre == nil {
			left++
		}
	}
	for i, st := range stages {
		js, ok := st.(*joinStage)
		if !ok || js.pre != nil {
			continue
		}
		side, err := readSide(ctx, e, js.other, js.o, e.budget.reserve(sideShare(e, js.o, left)))
		left--
		if err != nil {
			release()
			return nil, "", nil, err
		}
		sides = append(sides, side)
		c := *js
		c.pre = side
		out[i] = &c
		if i == pruneAt && side.spill == nil {
			var terms []string
			for k := range js.o.Left {
				if t := keyTerm(js.o.Left[k], js.o.Right[k], side.batches); t != "" {
					terms = append(terms, t)
				}
			}
			cond = strings.Join(terms, " and ")
		}
	}
	return out, cond, release, nil
}

// keyTerm says which values of the left key column left can match the
// right side's column right: an in list, or a range; "" when the values
// are of a kind statistics do not serve.
func keyTerm(left, right string, batches []arrow.RecordBatch) string {
	if strings.Contains(left, `"`) || len(batches) == 0 {
		return ""
	}
	idx := batches[0].Schema().FieldIndices(right)
	if len(idx) != 1 {
		return ""
	}
	kind, load := expr.Loader(batches[0].Schema().Field(idx[0]).Type)
	if load == nil {
		return ""
	}
	var lit func(v expr.Vec, i int) string
	var less func(a, b expr.Vec, i, j int) bool
	switch kind {
	case expr.KindInt:
		lit = func(v expr.Vec, i int) string { return strconv.FormatInt(v.I[i], 10) }
		less = func(a, b expr.Vec, i, j int) bool { return a.I[i] < b.I[j] }
	case expr.KindDate:
		lit = func(v expr.Vec, i int) string {
			return "date '" + time.Unix(v.I[i]*86400, 0).UTC().Format("2006-01-02") + "'"
		}
		less = func(a, b expr.Vec, i, j int) bool { return a.I[i] < b.I[j] }
	case expr.KindString:
		lit = func(v expr.Vec, i int) string { return "'" + strings.ReplaceAll(v.S(i), "'", "''") + "'" }
		less = func(a, b expr.Vec, i, j int) bool { return a.S(i) < b.S(j) }
	default:
		return ""
	}
	if kind == expr.KindInt || kind == expr.KindDate {
		return intKeyTerm(left, batches, idx[0], load, lit)
	}
	distinct := map[string]bool{}
	// The least and greatest values are kept as places and written out
	// at the end: writing each new greatest one (every row, when the
	// side is sorted by its key, as TPC-H's orders are) cost Q12 5%.
	var loV, hiV expr.Vec
	loI, hiI := -1, -1
	for _, b := range batches {
		v := load(b.Column(idx[0]))
		for i := range int(b.NumRows()) {
			if !v.IsValid(i) {
				continue
			}
			if loI < 0 || less(v, loV, i, loI) {
				loV, loI = v, i
			}
			if hiI < 0 || less(hiV, v, hiI, i) {
				hiV, hiI = v, i
			}
			if len(distinct) <= maxInList {
				distinct[lit(v, i)] = true
			}
		}
	}
	if loI < 0 {
		return "" // no key to match: the join keeps no left row anyway
	}
	return keyCond(left, slices.Collect(maps.Keys(distinct)), lit(loV, loI), lit(hiV, hiI))
}

// keyCond is the condition on the left key column left that the right
// side's keys give: an in list of distinct, its literals, when they are
// maxInList at most, else the range from lo to hi.
func keyCond(left string, distinct []string, lo, hi string) string {
	col := `"` + left + `"`
	if len(distinct) <= maxInList {
		slices.Sort(distinct)
		return fmt.Sprintf("%s in (%s)", col, strings.Join(distinct, ", "))
	}
	return fmt.Sprintf("%s between %s and %s", col, lo, hi)
}

// intKeyTerm is keyTerm for integer and date keys: their values compared
// and collected as they are, not through the closures that serve every
// kind (TPC-H Q4's 3.8 million lineitem keys took a fifth of its CPU).
func intKeyTerm(left string, batches []arrow.RecordBatch, idx int, load func(arrow.Array) expr.Vec, lit func(v expr.Vec, i int) string) string {
	var lo, hi int64
	seen := false
	distinct := map[int64]bool{}
	for _, b := range batches {
		v := load(b.Column(idx))
		xs := v.I[:b.NumRows()]
		if v.Valid == nil && len(xs) > 0 {
			// No nulls: the range in a loop of its own, which the
			// compiler keeps in registers.
			if !seen {
				lo, hi, seen = xs[0], xs[0], true
			}
			for _, x := range xs {
				lo, hi = min(lo, x), max(hi, x)
			}
			for _, x := range xs {
				if len(distinct) > maxInList {
					break
				}
				distinct[x] = true
			}
			continue
		}
		for i, x := range xs {
			if !v.IsValid(i) {
				continue
			}
			if !seen {
				lo, hi, seen = x, x, true
			}
			lo, hi = min(lo, x), max(hi, x)
			if len(distinct) <= maxInList {
				distinct[x] = true
			}
		}
	}
	if !seen {
		return "" // no key to match: the join keeps no left row anyway
	}
	one := func(x int64) string { return lit(expr.Vec{I: []int64{x}}, 0) }
	var list []string
	for x := range distinct {
		list = append(list, one(x))
	}
	return keyCond(left, list, one(lo), one(hi))
}
