package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Scratch is memory an expression's evaluation reuses from one batch to
// the next (see Expr.EvalScratch). Each evaluation takes the slices it
// makes in the same order, so after the first batch of a size none is
// allocated: on these machines fresh memory costs a page fault and its
// zeroing, more than the arithmetic that fills it. A Scratch is for one
// goroutine at a time; the zero value is ready to use.
type Scratch struct {
	i      [][]int64
	f      [][]float64
	b      [][]bool
	st     [][]string
	d      [][]decimal128.Num
	ni, nf int
	nb, ns int
	nd     int
	// loads are the columns loaded in this evaluation: an expression
	// that reads a column several times (TPC-H Q12 reads l_receiptdate
	// thrice) widens its dates once.
	loads []loaded
}

type loaded struct {
	a arrow.Array
	v Vec
}

func (s *Scratch) reset() {
	if s != nil {
		s.ni, s.nf, s.nb, s.ns, s.nd = 0, 0, 0, 0, 0
		clear(s.loads)
		s.loads = s.loads[:0]
	}
}

// load is column a's Vec, made by f the first time in an evaluation.
func (s *Scratch) load(a arrow.Array, f func(arrow.Array, *Scratch) Vec) Vec {
	if s == nil {
		return f(a, s)
	}
	for _, l := range s.loads {
		if l.a == a {
			return l.v
		}
	}
	v := f(a, s)
	s.loads = append(s.loads, loaded{a, v})
	return v
}

// ints is a slice of n int64s whose values are left as they were: the
// caller writes every one.
func (s *Scratch) ints(n int) []int64 {
	if s == nil {
		return make([]int64, n)
	}
	if s.ni == len(s.i) {
		s.i = append(s.i, nil)
	}
	if cap(s.i[s.ni]) < n {
		s.i[s.ni] = make([]int64, n)
	}
	out := s.i[s.ni][:n]
	s.ni++
	return out
}

// floats is ints for float64s.
func (s *Scratch) floats(n int) []float64 {
	if s == nil {
		return make([]float64, n)
	}
	if s.nf == len(s.f) {
		s.f = append(s.f, nil)
	}
	if cap(s.f[s.nf]) < n {
		s.f[s.nf] = make([]float64, n)
	}
	out := s.f[s.nf][:n]
	s.nf++
	return out
}

// bools is a slice of n false values.
func (s *Scratch) bools(n int) []bool {
	if s == nil {
		return make([]bool, n)
	}
	if s.nb == len(s.b) {
		s.b = append(s.b, nil)
	}
	if cap(s.b[s.nb]) < n {
		s.b[s.nb] = make([]bool, n)
	}
	out := s.b[s.nb][:n]
	clear(out)
	s.nb++
	return out
}

// strings is ints for computed strings.
func (s *Scratch) strings(n int) []string {
	if s == nil {
		return make([]string, n)
	}
	if s.ns == len(s.st) {
		s.st = append(s.st, nil)
	}
	if cap(s.st[s.ns]) < n {
		s.st[s.ns] = make([]string, n)
	}
	out := s.st[s.ns][:n]
	s.ns++
	return out
}

// decs is ints for decimals.
func (s *Scratch) decs(n int) []decimal128.Num {
	if s == nil {
		return make([]decimal128.Num, n)
	}
	if s.nd == len(s.d) {
		s.d = append(s.d, nil)
	}
	if cap(s.d[s.nd]) < n {
		s.d[s.nd] = make([]decimal128.Num, n)
	}
	out := s.d[s.nd][:n]
	s.nd++
	return out
}
