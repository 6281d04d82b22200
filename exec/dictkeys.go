package exec

import (
	"slices"

	"github.com/sluice-data/sluice/expr"
)

// dictKeys are the columns an aggregation after the scan groups by, for
// the scan to read those that are strings as dictionaries (scan --dict
// without asking): grouping by a dictionary's indices skips copying
// every value out of the Parquet dictionary, and the aggregation emits
// the values (TPC-H Q1's two flags: CPU 0.73 -> 0.55 s). Only when the
// stages before it pass the keys on untouched and read none of them
// (filter, select, drop, extend), and its aggregates read none: an
// expression over a key would get indices where it expects values.
func dictKeys(stages []Stage) []string {
	reads := func(text string, keys []string) bool {
		cols, ok := exprColumns(text)
		return !ok || slices.ContainsFunc(cols, func(c string) bool { return slices.Contains(keys, c) })
	}
	for i, st := range stages {
		a, ok := st.(*aggStage)
		if !ok {
			continue
		}
		if a.whole || len(a.keys) == 0 {
			return nil
		}
		for _, sp := range a.aggs {
			if sp.arg != nil && slices.ContainsFunc(expr.ColumnNames(sp.arg), func(c string) bool { return slices.Contains(a.keys, c) }) {
				return nil
			}
		}
		for _, b := range stages[:i] {
			switch s := b.(type) {
			case *filterStage:
				if reads(s.expr, a.keys) {
					return nil
				}
			case *projectStage:
				if !keepsColumns(s, a.keys) {
					return nil
				}
			case *computeStage:
				if !keepsRows(s, a.keys) {
					return nil
				}
				for _, c := range s.cols {
					if c.Expr != "" && c.Expr != c.Name && reads(c.Expr, a.keys) {
						return nil
					}
				}
			default:
				return nil
			}
		}
		return slices.Clone(a.keys)
	}
	return nil
}
