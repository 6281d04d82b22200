package exec

import (
	"slices"
	"strings"
	"testing"
)

// TestLet: a column holding another pipeline's one value, on every row:
// a number, a string, null when it gives no row; more rows or columns are
// errors.
func TestLet(t *testing.T) {
	mem := checkedMem(t)
	must := mustStage(t)
	left := batch(t, mem, kvSchema, []any{"a", 1, 1.5}, []any{"b", 2, nil})
	defer left.Release()
	right := batch(t, mem, kvSchema, []any{"x", 7, 2.5}, []any{"y", 8, nil})
	defer right.Release()
	one := func(stages ...Stage) Pipeline {
		return Pipeline{Source: FromBatches(kvSchema, right), Stages: stages}
	}
	for _, c := range []struct {
		name  string
		other Pipeline
		want  []string
	}{
		{"number", one(must(Filter("k = 'x'")), Select("n")), []string{"a 1 1.5 7", "b 2 (null) 7"}},
		{"string", one(must(Filter("n = 8")), Select("k")), []string{"a 1 1.5 y", "b 2 (null) y"}},
		{"no row", one(must(Filter("n > 8")), Select("x")), []string{"a 1 1.5 (null)", "b 2 (null) (null)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := collectRows(t, mem, FromBatches(kvSchema, left), Let("v", c.other))
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
	// Used in an expression, as a scalar subquery is.
	got, err := collectRows(t, mem, FromBatches(kvSchema, left), Let("v", one(must(Filter("k = 'x'")), Select("n"))), must(Filter("n * 4 < v")))
	if err != nil || !slices.Equal(got, []string{"a 1 1.5 7"}) {
		t.Errorf("in a filter: %q, %v", got, err)
	}
	for _, c := range []struct {
		other Pipeline
		want  string
	}{
		{one(Select("n")), "gave 2 rows: it must give at most one"},
		{one(Head(1)), "gives 3 columns"},
	} {
		_, err := collectRows(t, mem, FromBatches(kvSchema, left), Let("v", c.other))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	if _, err := collectRows(t, mem, FromBatches(kvSchema, left), Let("k", one(Head(1), Select("n")))); err == nil || !strings.Contains(err.Error(), `already has a column "k"`) {
		t.Errorf("a name the input has: %v", err)
	}
}
