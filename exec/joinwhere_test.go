package exec

import (
	"slices"
	"testing"
)

// TestJoinWherePushed: what a join's --where implies of each side alone
// filters that side before the join (the right side for all but right
// and full joins, the left side for inner and semi joins), and the rows
// are those of the join without it.
func TestJoinWherePushed(t *testing.T) {
	_, lineitem := testData(t)
	right := Pipeline{Source: Scan([]string{lineitem}, ScanOptions{}), Stages: []Stage{
		Select("l_orderkey", "l_quantity", "l_linenumber"),
		Rename([2]string{"l_quantity", "rq"}, [2]string{"l_linenumber", "rn"}),
	}}
	const where = "(l_quantity < 10 and rq > 40) or (l_linenumber = 1 and rn = 2 and l_quantity < rq)"
	for _, c := range []struct {
		how         string
		left, right string // the filters pushed, "" for none
	}{
		{"inner", "((l_quantity < 10) or (l_linenumber = 1))", "((rq > 40) or (rn = 2))"},
		{"semi", "((l_quantity < 10) or (l_linenumber = 1))", "((rq > 40) or (rn = 2))"},
		{"left", "", "((rq > 40) or (rn = 2))"},
		{"anti", "", "((rq > 40) or (rn = 2))"},
		{"right", "", ""},
		{"full", "", ""},
	} {
		t.Run(c.how, func(t *testing.T) {
			join := Join(right, JoinOptions{How: c.how, Left: []string{"l_orderkey"}, Right: []string{"l_orderkey"}, Where: where})
			pushed := pushWhere([]Stage{Select("l_orderkey", "l_quantity", "l_linenumber"), join})
			var left, rightF string
			if f, ok := pushed[1].(*filterStage); ok {
				left = f.expr
			}
			js := pushed[len(pushed)-1].(*joinStage)
			if f, ok := js.other.Stages[len(js.other.Stages)-1].(*filterStage); ok {
				rightF = f.expr
			}
			if left != c.left || rightF != c.right {
				t.Errorf("pushed %q before and %q into the right side, want %q and %q", left, rightF, c.left, c.right)
			}
			if !js.wherePushed || len(pushWhere(pushed)) != len(pushed) {
				t.Error("pushed twice")
			}

			mem := checkedMem(t)
			got, err := collectRows(t, mem, Scan([]string{lineitem}, ScanOptions{}), Select("l_orderkey", "l_quantity", "l_linenumber"), join)
			if err != nil {
				t.Fatal(err)
			}
			as := *join.(*joinStage)
			as.wherePushed = true // as it is
			want, err := collectRows(t, mem, Scan([]string{lineitem}, ScanOptions{}), Select("l_orderkey", "l_quantity", "l_linenumber"), &as)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || len(want) == 0 {
				t.Errorf("%d rows pushed, %d as it is", len(got), len(want))
			}
		})
	}
}
