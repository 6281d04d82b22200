package expr

import (
	"math/rand/v2"
	"testing"
)

// TestLogicThreeValued checks and/or against SQL's truth tables row by
// row, over lengths that are and are not multiples of a word, with and
// without nulls, and with either side a constant.
func TestLogicThreeValued(t *testing.T) {
	ref := logic3
	r := rand.New(rand.NewPCG(1, 2))
	vec := func(n int, isConst, nulls bool) (Vec, []int) {
		m := n
		if isConst {
			m = 1
		}
		v := Vec{K: KindBool, Const: isConst, B: make([]bool, m)}
		if nulls {
			v.Valid = make([]bool, m)
		}
		tri := make([]int, n)
		for i := range m {
			v.B[i] = r.IntN(2) == 1
			if nulls {
				v.Valid[i] = r.IntN(3) > 0
			}
		}
		for i := range n {
			j := i
			if isConst {
				j = 0
			}
			switch {
			case !v.IsValid(j):
				tri[i] = 2
			case v.B[j]:
				tri[i] = 1
			}
		}
		return v, tri
	}
	var s Scratch
	checks := 0
	for _, n := range []int{1, 7, 8, 9, 64, 1000, 1003} {
		for _, and := range []bool{true, false} {
			for shape := range 16 {
				aConst, bConst, aNull, bNull := shape&1 != 0, shape&2 != 0, shape&4 != 0, shape&8 != 0
				if n == 1 && (aConst || bConst) {
					continue
				}
				for range 4 {
					s.reset()
					a, at := vec(n, aConst, aNull)
					b, bt := vec(n, bConst, bNull)
					got := logicVec(&s, and, a, b, n)
					for i := range n {
						j := i
						if got.Const {
							j = 0
						}
						g := 0
						switch {
						case !got.IsValid(j):
							g = 2
						case got.B[j]:
							g = 1
						}
						if w := ref(and, at[i], bt[i]); g != w {
							t.Fatalf("n=%d and=%v shape=%04b row %d: %d op %d gave %d, want %d", n, and, shape, i, at[i], bt[i], g, w)
						}
						checks++
					}
				}
			}
		}
	}
	if checks == 0 {
		t.Fatal("nothing checked")
	}
}

// logic3 is SQL's and (or) of two values of three-valued logic: 0 false,
// 1 true, 2 null.
func logic3(and bool, x, y int) int {
	if and {
		switch {
		case x == 0 || y == 0:
			return 0
		case x == 1 && y == 1:
			return 1
		}
		return 2
	}
	switch {
	case x == 1 || y == 1:
		return 1
	case x == 0 && y == 0:
		return 0
	}
	return 2
}
