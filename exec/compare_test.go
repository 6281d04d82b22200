package exec

import (
	"bytes"
	"context"
	"testing"
)

// Nulls sort last in both directions, as DuckDB's ORDER BY puts them by
// default, in sort and in top alike.
func TestNullsSortLast(t *testing.T) {
	for _, c := range []struct {
		desc bool
		want string
	}{
		{false, "k,n,x\nb,1,\nc,2,\na,,\n"},
		{true, "k,n,x\nc,2,\nb,1,\na,,\n"},
	} {
		for _, mk := range []func([]SortKey) Stage{
			func(k []SortKey) Stage { return Sort(k) },
			func(k []SortKey) Stage { return Top(3, k) },
		} {
			mem := checkedMem(t)
			b := batch(t, mem, kvSchema, []any{"a", nil, nil}, []any{"b", 1, nil}, []any{"c", 2, nil})
			var out bytes.Buffer
			st := mk([]SortKey{{Column: "n", Desc: c.desc}})
			if err := Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, b), Stages: []Stage{st, ToCSV(&out)}}, Options{Open: testOpen, Mem: mem}); err != nil {
				t.Fatal(err)
			}
			b.Release()
			if out.String() != c.want {
				t.Errorf("%s desc=%v: %q, want %q", st.Name(), c.desc, out.String(), c.want)
			}
		}
	}
}
