package exec

import (
	"slices"

	"github.com/sluice-data/sluice/expr"
)

// pushWhere gives the sides of each join with --where what it implies of
// their own columns (expr.Implied) as filters before the join: the right
// side's at the end of its pipeline, for every join that drops the right
// rows without a match (all but right and full joins); the left side's
// right before the join, for an inner or semi join, which drops the left
// rows without one. --where itself stays. So TPC-H Q19's join indexes
// the few hundred parts of its three brands, containers and sizes
// instead of all 200 thousand, and probes only lineitems of quantities
// from 1 to 30. A right side whose columns are not known before it runs,
// or named with --prefix, keeps its rows.
func pushWhere(stages []Stage) []Stage {
	out := stages
	for i := 0; i < len(out); i++ {
		js, ok := out[i].(*joinStage)
		if !ok || js.o.Where == "" || js.wherePushed || js.pre != nil {
			continue
		}
		n, err := expr.Parse(js.o.Where)
		if err != nil {
			continue // the join says so when it binds
		}
		names, known := outputNames(js.other.Stages)
		if !known {
			continue
		}
		right := map[string]bool{}
		for _, r := range names {
			// A key named alike on both sides is the left side's.
			if !(js.o.Prefix == "" && slices.Contains(js.o.Left, r) && slices.Contains(js.o.Right, r)) {
				right[js.o.Prefix+r] = true
			}
		}
		c := *js
		c.wherePushed = true
		if !js.preserves(false) && js.o.Prefix == "" {
			if m := expr.Implied(n, func(col string) bool { return right[col] }); m != nil {
				c.other.Stages = append(slices.Clone(js.other.Stages), &filterStage{expr: expr.String(m), name: "join --where"})
			}
		}
		if &out[0] == &stages[0] {
			out = slices.Clone(stages)
		}
		out[i] = &c
		if js.o.How == "inner" || js.o.How == "semi" {
			if m := expr.Implied(n, func(col string) bool { return !right[col] }); m != nil {
				out = slices.Insert(out, i, Stage(&filterStage{expr: expr.String(m), name: "join --where"}))
				i++
			}
		}
	}
	return out
}
