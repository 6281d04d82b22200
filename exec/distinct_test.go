package exec

import (
	"bytes"
	"strings"
	"testing"
)

// TestDistinct: the first row of each key, nulls one key, in key order;
// every column as the key; one process, four workers, piped, and after a
// filter (whose rows the distinct leaves out without copying).
func TestDistinct(t *testing.T) {
	mem := checkedMem(t)
	b1 := batch(t, mem, moreSchema, []any{"b", 2, nil, "x"}, []any{nil, 3, 2.0, nil}, []any{"a", 1, 1.5, "q"}, []any{"a", 1, 1.5, "q"})
	defer b1.Release()
	b2 := batch(t, mem, moreSchema, []any{"b", 10, 4.0, "z"}, []any{nil, 5, nil, nil}, []any{"c", nil, nil, nil}, []any{"b", 2, nil, "x"})
	defer b2.Release()
	for _, c := range []struct {
		stage Stage
		want  []string
	}{
		{Distinct([]string{"k"}), []string{"a 1 1.5 q", "b 2 (null) x", "c (null) (null) (null)", "(null) 3 2 (null)"}},
		{Distinct([]string{"s", "k"}), []string{"a 1 1.5 q", "b 2 (null) x", "b 10 4 z", "c (null) (null) (null)", "(null) 3 2 (null)"}},
		{Distinct(nil), []string{"a 1 1.5 q", "b 2 (null) x", "b 10 4 z", "c (null) (null) (null)", "(null) 3 2 (null)", "(null) 5 (null) (null)"}},
	} {
		rows, err := collectRows(t, mem, FromBatches(moreSchema, b1, b2), c.stage)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(rows, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%v: got\n%s\nwant\n%s", c.stage, strings.Join(rows, "\n"), strings.Join(c.want, "\n"))
		}
	}
	rows, err := collectRows(t, mem, FromBatches(moreSchema, b1, b2), mustStage(t)(Filter("n > 2")), Distinct([]string{"k"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows, ","); got != "b 10 4 z,(null) 3 2 (null)" {
		t.Errorf("after a filter: %s", got)
	}
	if _, err := collectRows(t, mem, FromBatches(moreSchema, b1), Distinct([]string{"nope"})); err == nil || !strings.Contains(err.Error(), "distinct") {
		t.Errorf("an unknown key: %v", err)
	}

	recs := randomMore(t, 3, 25, 400)
	for _, on := range [][]string{{"k"}, {"s"}, {"k", "n"}, nil} {
		want := fused(t, mem, 1, FromBatches(moreSchema, recs...), Distinct(on))
		if got := fused(t, mem, 4, FromBatches(moreSchema, recs...), Distinct(on)); !bytes.Equal(got, want) {
			t.Errorf("distinct %v: 4 workers differ", on)
		}
		if got := piped(t, mem, FromBatches(moreSchema, recs...), Distinct(on)); !bytes.Equal(got, want) {
			t.Errorf("distinct %v: piped differs", on)
		}
	}
}
