package exec

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestKeyTerm: what the right side's keys say of the left side's rows:
// an in list of few values, else the range from the least to the
// greatest, wherever in the batches they are.
func TestKeyTerm(t *testing.T) {
	mem := checkedMem(t)
	ints := func(vs ...int64) arrow.RecordBatch {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(vs, nil)
		a := b.NewArray()
		defer a.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: a.DataType()}}, nil), []arrow.Array{a}, int64(a.Len()))
	}
	strs := func(vs ...string) arrow.RecordBatch {
		b := array.NewStringBuilder(mem)
		defer b.Release()
		b.AppendValues(vs, nil)
		a := b.NewArray()
		defer a.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: a.DataType()}}, nil), []arrow.Array{a}, int64(a.Len()))
	}
	many := make([]int64, maxInList+5)
	for i := range many {
		many[i] = int64(1000 - i) // the greatest first, the least last
	}
	for _, c := range []struct {
		batches []arrow.RecordBatch
		want    string
	}{
		{[]arrow.RecordBatch{ints(3, 1), ints(2, 3)}, `"l" in (1, 2, 3)`},
		{[]arrow.RecordBatch{ints(many[:10]...), ints(many[10:]...), ints(5000), ints(-70000)}, `"l" between -70000 and 5000`},
		{[]arrow.RecordBatch{ints(many...)}, fmt.Sprintf(`"l" between %d and 1000`, many[len(many)-1])},
		{[]arrow.RecordBatch{strs("b", "it's"), strs("a")}, `"l" in ('a', 'b', 'it''s')`},
	} {
		if got := keyTerm("l", "k", c.batches); got != c.want {
			t.Errorf("%v: %s, want %s", c.batches, got, c.want)
		}
		releaseAll(c.batches)
	}
}
