package expr

import (
	"bytes"
	"cmp"
	endian "encoding/binary"
	"math"
	"math/bits"
	"regexp"
	"strings"
	"unsafe"
)

func bothValid(s *Scratch, a, b Vec, n int) []bool {
	switch {
	case a.Valid == nil && b.Valid == nil:
		return nil
	case a.Const && b.Const:
		return []bool{a.IsValid(0) && b.IsValid(0)}
	}
	out := s.bools(n)
	for i := range out {
		out[i] = a.IsValid(at(a, i)) && b.IsValid(at(b, i))
	}
	return out
}

func at(v Vec, i int) int {
	if v.Const {
		return 0
	}
	return i
}

func asFloat(s *Scratch, v Vec) Vec {
	if v.K == KindFloat {
		return v
	}
	if v.K == KindDecimal {
		f := s.floats(len(v.D))
		for i, x := range v.D {
			f[i] = DecFloat(x, v.Dec.S)
		}
		return Vec{K: KindFloat, Const: v.Const, F: f, Valid: v.Valid, own: true}
	}
	f := s.floats(len(v.I))
	for i, x := range v.I {
		f[i] = float64(x)
	}
	return Vec{K: KindFloat, Const: v.Const, F: f, Valid: v.Valid, own: true}
}

func asTime(s *Scratch, v Vec) Vec {
	if v.K == KindTime {
		return v
	}
	return Vec{K: KindTime, Const: v.Const, I: scale(s, v.I, 86_400e9), Valid: v.Valid}
}

func compareVec[T cmp.Ordered](s *Scratch, op string, xs, ys []T, a, b Vec, n int) Vec {
	if a.Const && b.Const {
		n = 1
	}
	out := s.bools(n)
	switch {
	case a.Const && !b.Const:
		compareConst(flip(op), ys, xs[0], out)
	case b.Const && !a.Const:
		compareConst(op, xs, ys[0], out)
	default:
		compareSlices(op, xs[:n], ys[:n], out)
	}
	if fx, ok := any(xs).([]float64); ok {
		nanOrder(op, fx, any(ys).([]float64), a, b, out)
	}
	return Vec{K: KindBool, Const: a.Const && b.Const, B: out, Valid: bothValid(s, a, b, n)}
}

// nanOrder redoes the comparisons that involve a NaN in DuckDB's order,
// where NaN equals NaN and is greater than every other number (IEEE's
// comparisons are all false).
func nanOrder(op string, xs, ys []float64, a, b Vec, out []bool) {
	switch {
	case !a.Const && b.Const && ys[0] == ys[0]:
		// The common shape, a column against a number: only a NaN row
		// changes, and it is greater.
		for i, x := range xs[:len(out)] {
			if x != x {
				out[i] = holds(op, 1)
			}
		}
	case a.Const && !b.Const && xs[0] == xs[0]:
		for i, y := range ys[:len(out)] {
			if y != y {
				out[i] = holds(op, -1)
			}
		}
	default:
		for i := range out {
			if x, y := xs[at(a, i)], ys[at(b, i)]; x != x || y != y {
				out[i] = holds(op, CompareFloats(x, y))
			}
		}
	}
}

// CompareFloats orders floats as DuckDB does: NaN after every number and
// equal to itself, -0 equal to 0.
func CompareFloats(x, y float64) int {
	switch xn, yn := x != x, y != y; {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	}
	return cmp.Compare(x, y)
}

func flip(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}

func compareConst[T cmp.Ordered](op string, xs []T, c T, out []bool) {
	xs = xs[:len(out)]
	switch op {
	case "=":
		for i, x := range xs {
			out[i] = x == c
		}
	case "!=":
		for i, x := range xs {
			out[i] = x != c
		}
	case "<":
		for i, x := range xs {
			out[i] = x < c
		}
	case "<=":
		for i, x := range xs {
			out[i] = x <= c
		}
	case ">":
		for i, x := range xs {
			out[i] = x > c
		}
	case ">=":
		for i, x := range xs {
			out[i] = x >= c
		}
	}
}

func compareSlices[T cmp.Ordered](op string, xs, ys []T, out []bool) {
	ys = ys[:len(xs)]
	switch op {
	case "=":
		for i, x := range xs {
			out[i] = x == ys[i]
		}
	case "!=":
		for i, x := range xs {
			out[i] = x != ys[i]
		}
	case "<":
		for i, x := range xs {
			out[i] = x < ys[i]
		}
	case "<=":
		for i, x := range xs {
			out[i] = x <= ys[i]
		}
	case ">":
		for i, x := range xs {
			out[i] = x > ys[i]
		}
	case ">=":
		for i, x := range xs {
			out[i] = x >= ys[i]
		}
	}
}

// compareStrings compares two strings a row; where sel is not nil, only
// the rows where it holds (see compiled.sel).
func compareStrings(s *Scratch, op string, a, b Vec, n int, sel []bool) Vec {
	if a.Const && b.Const {
		n, sel = 1, nil
	}
	out := s.bools(n)
	want := opHolds(op)
	switch {
	case a.didx != nil && b.Const:
		lit := b.S(0)
		byEntry(s, a, func(v string) bool { return want[strings.Compare(v, lit)+1] }, out, sel)
	case a.soff != nil && b.Const && (op == "=" || op == "!="):
		// A column against a constant, the most common: its bytes
		// compared in place, with neither a call nor a string header a
		// row.
		lit, eq := b.S(0), op == "="
		for i := range out {
			if sel == nil || sel[i] {
				o0, o1 := a.soff[i], a.soff[i+1]
				out[i] = (string(a.sdata[o0:o1]) == lit) == eq
			}
		}
	case a.soff != nil && b.Const:
		lit := []byte(b.S(0))
		for i := range out {
			if sel == nil || sel[i] {
				out[i] = want[bytes.Compare(a.bytesAt(i), lit)+1]
			}
		}
	default:
		for i := range out {
			if sel == nil || sel[i] {
				out[i] = want[strings.Compare(a.S(at(a, i)), b.S(at(b, i)))+1]
			}
		}
	}
	return Vec{K: KindBool, Const: a.Const && b.Const, B: out, Valid: bothValid(s, a, b, n)}
}

// byEntry is test f of a dictionary Vec's strings (false: x is none),
// written to out: once per entry and then looked up by each row's index
// when there are fewer entries than rows (every row is then written, the
// lookup costing less than a look at sel), else row by row where sel
// holds. A null row's index may be any value: one out of range is
// skipped, the row's value being null anyway.
func byEntry(s *Scratch, x Vec, f func(string) bool, out, sel []bool) bool {
	if x.didx == nil || x.Const {
		return false
	}
	m := x.dictLen()
	idx := x.didx[:len(out)]
	if m > len(out) {
		for i, j := range idx {
			if (sel == nil || sel[i]) && uint32(j) < uint32(m) {
				out[i] = f(x.dictAt(j))
			}
		}
		return true
	}
	t := s.bools(m)
	for j := range t {
		t[j] = f(x.dictAt(int32(j)))
	}
	for i, j := range idx {
		if uint32(j) < uint32(m) {
			out[i] = t[j]
		}
	}
	return true
}

// stringSet is the membership test of an in-list of string constants:
// a map past a few of them, else a look at each.
func stringSet(set []string) func(string) bool {
	if len(set) > 8 {
		index := make(map[string]struct{}, len(set))
		for _, c := range set {
			index[c] = struct{}{}
		}
		return func(v string) bool {
			_, ok := index[v]
			return ok
		}
	}
	return func(v string) bool {
		for _, c := range set {
			if v == c {
				return true
			}
		}
		return false
	}
}

// opHolds is whether op holds when a comparison gives -1, 0 or 1 (at
// index c+1): the operator looked at once, not in every row.
func opHolds(op string) [3]bool {
	var w [3]bool
	for c := -1; c <= 1; c++ {
		w[c+1] = holds(op, c)
	}
	return w
}

// inStrings is x in (the constants), member saying whether a value is
// one of them: one pass over x, where an or of equalities makes one for
// each constant. Null where x is.
// Where sel is not nil, only the rows where it holds (compiled.sel).
func inStrings(s *Scratch, x Vec, member func(string) bool, n int, sel []bool) Vec {
	if x.Const {
		n, sel = 1, nil
	}
	out := s.bools(n)
	if byEntry(s, x, member, out, sel) {
		return Vec{K: KindBool, B: out, Valid: x.Valid}
	}
	if x.soff != nil && !x.Const {
		for i := range out {
			if sel == nil || sel[i] {
				b := x.bytesAt(i)
				out[i] = member(unsafe.String(unsafe.SliceData(b), len(b)))
			}
		}
	} else {
		for i := range out {
			if sel == nil || sel[i] {
				out[i] = member(x.S(at(x, i)))
			}
		}
	}
	return Vec{K: KindBool, Const: x.Const, B: out, Valid: x.Valid}
}

func compareBools(s *Scratch, op string, a, b Vec, n int) Vec {
	if a.Const && b.Const {
		n = 1
	}
	out := s.bools(n)
	for i := range out {
		x, y := 0, 0
		if a.B[at(a, i)] {
			x = 1
		}
		if b.B[at(b, i)] {
			y = 1
		}
		out[i] = holds(op, cmp.Compare(x, y))
	}
	return Vec{K: KindBool, Const: a.Const && b.Const, B: out, Valid: bothValid(s, a, b, n)}
}

func holds(op string, c int) bool {
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

// likeMatcher is SQL's like: % is any run of characters, _ any one.
// Patterns without _ are matched without a regular expression.
func likeMatcher(pattern string) func(string) bool {
	if !strings.Contains(pattern, "_") {
		return literalLike(pattern)
	}
	return likeRegexp(pattern).MatchString
}

// literalLike matches a pattern of literals between %s: the first
// literal is a prefix, the last a suffix, and those between are found
// in order, each at its leftmost place after the one before, which finds
// a match whenever there is one. (Backtracking through a regular
// expression was half of TPC-H Q13's time, on '%special%requests%'.)
func literalLike(pattern string) func(string) bool {
	parts := strings.Split(pattern, "%")
	if len(parts) == 1 {
		return func(s string) bool { return s == pattern }
	}
	first, last := parts[0], parts[len(parts)-1]
	minLen := len(first) + len(last)
	var mid []string
	for _, p := range parts[1 : len(parts)-1] {
		if p != "" {
			mid = append(mid, p)
			minLen += len(p)
		}
	}
	return func(s string) bool {
		if len(s) < minLen || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
			return false
		}
		s = s[len(first) : len(s)-len(last)]
		for _, m := range mid {
			i := strings.Index(s, m)
			if i < 0 {
				return false
			}
			s = s[i+len(m):]
		}
		return true
	}
}

// likeRegexp is a like pattern as a regular expression.
func likeRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?s)^")
	for _, r := range pattern {
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// stringMatch is f of each string; where sel is not nil, of the rows
// where it holds (compiled.sel).
func stringMatch(s *Scratch, f func(string) bool, a Vec, n int, sel []bool) Vec {
	if a.Const {
		n, sel = 1, nil
	}
	out := s.bools(n)
	if byEntry(s, a, f, out, sel) {
		return Vec{K: KindBool, B: out, Valid: a.Valid}
	}
	for i := range out {
		if a.IsValid(i) && (sel == nil || sel[i]) {
			out[i] = f(a.S(i))
		}
	}
	return Vec{K: KindBool, Const: a.Const, B: out, Valid: a.Valid}
}

func stringPredicate(s *Scratch, f func(s, p string) bool, a, b Vec, n int, sel []bool) Vec {
	if a.Const && b.Const {
		n, sel = 1, nil
	}
	out := s.bools(n)
	if b.Const && b.IsValid(0) {
		lit := b.S(0)
		if byEntry(s, a, func(v string) bool { return f(v, lit) }, out, sel) {
			return Vec{K: KindBool, B: out, Valid: a.Valid}
		}
	}
	for i := range out {
		if a.IsValid(at(a, i)) && b.IsValid(at(b, i)) && (sel == nil || sel[i]) {
			out[i] = f(a.S(at(a, i)), b.S(at(b, i)))
		}
	}
	return Vec{K: KindBool, Const: a.Const && b.Const, B: out, Valid: bothValid(s, a, b, n)}
}

// logicVec is SQL's three-valued and/or: false and null is false, true
// or null is true.
func logicVec(s *Scratch, and bool, a, b Vec, n int) Vec {
	if a.Const && b.Const {
		n = 1
	}
	out := s.bools(n)
	ab, bb := spread(s, a.B, a.Const, n), spread(s, b.B, b.Const, n)
	if a.Valid == nil && b.Valid == nil {
		wordwise(out, ab, bb, and)
		return Vec{K: KindBool, Const: a.Const && b.Const, B: out}
	}
	// With nulls: a value counts only where it is valid (x = valid and
	// value). And is valid where both are, or where either is a valid
	// false; or is valid where both are, or where either is a valid true.
	av, bv := spread(s, a.Valid, a.Const, n), spread(s, b.Valid, b.Const, n)
	valid := s.bools(n)
	for i := range out {
		xv, yv := av == nil || av[i], bv == nil || bv[i]
		x, y := xv && ab[i], yv && bb[i]
		if and {
			out[i] = x && y
			valid[i] = xv && yv || xv && !x || yv && !y
		} else {
			out[i] = x || y
			valid[i] = xv && yv || x || y
		}
	}
	return Vec{K: KindBool, Const: a.Const && b.Const, B: out, Valid: valid}
}

// spread is a constant's one value repeated n times (nil stays nil), so
// that the loops over two vectors index both alike.
func spread(s *Scratch, b []bool, isConst bool, n int) []bool {
	if b == nil || !isConst || n == 1 {
		return b
	}
	out := s.bools(n)
	if b[0] {
		for i := range out {
			out[i] = true
		}
	}
	return out
}

// wordwise sets out[i] to a[i] and (or, with and false) b[i], eight
// bools at a time: a Go bool is one byte holding 0 or 1, and and/or of
// such bytes are such bytes, so a word's operation is its eight bools'.
// (The jump a bool's && or || compiles to, mispredicted every few rows,
// is what cost.)
func wordwise(out, a, b []bool, and bool) {
	n := len(out)
	ob, xb, yb := boolBytes(out), boolBytes(a[:n]), boolBytes(b[:n])
	i := 0
	if and {
		for ; i+8 <= n; i += 8 {
			endian.LittleEndian.PutUint64(ob[i:], endian.LittleEndian.Uint64(xb[i:])&endian.LittleEndian.Uint64(yb[i:]))
		}
		for ; i < n; i++ {
			ob[i] = xb[i] & yb[i]
		}
		return
	}
	for ; i+8 <= n; i += 8 {
		endian.LittleEndian.PutUint64(ob[i:], endian.LittleEndian.Uint64(xb[i:])|endian.LittleEndian.Uint64(yb[i:]))
	}
	for ; i < n; i++ {
		ob[i] = xb[i] | yb[i]
	}
}

func boolBytes(b []bool) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

func notVec(s *Scratch, a Vec) Vec {
	out := s.bools(len(a.B))
	for i, x := range a.B {
		out[i] = !x
	}
	return Vec{K: KindBool, Const: a.Const, B: out, Valid: a.Valid}
}

func negVec(s *Scratch, a Vec) Vec {
	if a.K == KindDecimal {
		out := s.decs(len(a.D))
		for i, x := range a.D {
			out[i] = x.Negate()
		}
		return Vec{K: KindDecimal, Const: a.Const, D: out, Dec: a.Dec, Valid: a.Valid}
	}
	if a.K == KindFloat {
		out := s.floats(len(a.F))
		for i, x := range a.F {
			out[i] = -x
		}
		return Vec{K: KindFloat, Const: a.Const, F: out, Valid: a.Valid}
	}
	out := s.ints(len(a.I))
	for i, x := range a.I {
		out[i] = -x
	}
	return Vec{K: a.K, Const: a.Const, I: out, Valid: a.Valid}
}

func absVec(s *Scratch, a Vec) Vec {
	if a.K == KindDecimal {
		out := s.decs(len(a.D))
		for i, x := range a.D {
			out[i] = x.Abs()
		}
		return Vec{K: KindDecimal, Const: a.Const, D: out, Dec: a.Dec, Valid: a.Valid}
	}
	if a.K == KindFloat {
		out := s.floats(len(a.F))
		for i, x := range a.F {
			out[i] = math.Abs(x)
		}
		return Vec{K: KindFloat, Const: a.Const, F: out, Valid: a.Valid}
	}
	out := s.ints(len(a.I))
	for i, x := range a.I {
		if x < 0 {
			x = -x
		}
		out[i] = x
	}
	return Vec{K: a.K, Const: a.Const, I: out, Valid: a.Valid}
}

func isNullVec(s *Scratch, a Vec, not bool, n int) Vec {
	if a.Const {
		return Vec{K: KindBool, Const: true, B: []bool{a.IsValid(0) == not}}
	}
	out := s.bools(n)
	for i := range out {
		out[i] = a.IsValid(i) == not
	}
	return Vec{K: KindBool, B: out}
}

// arithInt adds, subtracts, multiplies or takes remainders of integers
// (and days); a remainder by zero is null.
func arithInt(s *Scratch, op string, a, b Vec, n int) Vec {
	if a.Const && b.Const {
		n = 1
	}
	out := s.ints(n)
	valid := arith(s, op, a, b, a.I, b.I, out, func(x, y int64) int64 { return x % y }, true)
	checkInts(op, a, b, out, valid)
	return Vec{K: KindInt, Const: a.Const && b.Const, I: out, Valid: valid}
}

// checkInts stops the evaluation when a valid row of out = a op b wrapped
// past 64 bits, as DuckDB stops on a BIGINT's overflow. A pass of its own
// keeps arith's loops free of the test; a constant operand (x * 3) is
// checked against bounds worked out once.
func checkInts(op string, a, b Vec, out []int64, valid []bool) {
	name, ok := decOpNames[op]
	if !ok || op == "%" {
		return // a remainder is no larger than its dividend
	}
	bad := -1
	switch {
	case op == "*" && (a.Const || b.Const) && !(a.Const && b.Const):
		xs, c := a.I, b.I[0]
		if a.Const {
			xs, c = b.I, a.I[0]
		}
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64) // x*c fits when lo <= x <= hi
		switch {
		case c == -1:
			lo = math.MinInt64 + 1
		case c > 0:
			lo, hi = math.MinInt64/c, math.MaxInt64/c
		case c < 0:
			lo, hi = math.MaxInt64/c, math.MinInt64/c
		}
		for i, x := range xs[:len(out)] {
			if x < lo || x > hi {
				if bad = i; valid == nil || valid[i] {
					break
				}
				bad = -1
			}
		}
	default:
		// A constant's index mask is 0: row i reads its one value.
		am, bm := -1, -1
		if a.Const {
			am = 0
		}
		if b.Const {
			bm = 0
		}
		xs, ys := a.I, b.I
		var or int64 // the sign bits of every row's test, or-ed: negative if any wrapped
		switch op {
		case "+":
			for i, r := range out {
				x, y := xs[i&am], ys[i&bm]
				or |= (x ^ r) & (y ^ r)
			}
		case "-":
			for i, r := range out {
				x, y := xs[i&am], ys[i&bm]
				or |= (x ^ y) & (x ^ r)
			}
		default:
			for i := range out {
				if mulWraps(xs[i&am], ys[i&bm]) {
					or = -1
				}
			}
		}
		if or < 0 {
			// Some row wrapped: find whether a valid one did.
			for i, r := range out {
				x, y := xs[i&am], ys[i&bm]
				var wrapped bool
				switch op {
				case "+":
					wrapped = (x^r)&(y^r) < 0
				case "-":
					wrapped = (x^y)&(x^r) < 0
				default:
					wrapped = mulWraps(x, y)
				}
				if wrapped && (valid == nil || valid[i]) {
					bad = i
					break
				}
			}
		}
	}
	if bad >= 0 {
		panic(&OverflowError{Op: name, Type: "BIGINT"})
	}
}

// mulWraps says x*y passes 64 bits: its magnitude needs more than 63
// bits, or exactly 2^63 with a positive sign.
func mulWraps(x, y int64) bool {
	h, l := bits.Mul64(uint64(abs64(x)), uint64(abs64(y)))
	return h != 0 || l > math.MaxInt64 && ((x < 0) == (y < 0) || l > 1<<63)
}

func allValid(s *Scratch, n int) []bool {
	v := s.bools(n)
	for i := range v {
		v[i] = true
	}
	return v
}

// arithFloat is float arithmetic; division or remainder by zero is
// IEEE's (an infinity, or NaN), as DuckDB's doubles.
func arithFloat(s *Scratch, op string, a, b Vec, n int) Vec {
	if a.Const && b.Const {
		n = 1
	}
	// Each element is read before its result is written, so a result can
	// go over an operand the evaluation made: an expression like
	// x * (1 - y) * (1 + z) then makes two slices, not four.
	var out []float64
	switch {
	case a.own && !a.Const && len(a.F) >= n:
		out = a.F[:n]
	case b.own && !b.Const && len(b.F) >= n:
		out = b.F[:n]
	default:
		out = s.floats(n)
	}
	valid := arith(s, op, a, b, a.F, b.F, out, math.Mod, false)
	return Vec{K: KindFloat, Const: a.Const && b.Const, F: out, Valid: valid, own: true}
}

// arith writes xs op ys (a's and b's values) into out and returns the
// rows' validity: both operands' and, for / and % with zeroNull, a
// divisor that is not zero. rem is T's remainder. The shapes that dominate (column op column,
// constant op column, column op constant, with +, - or *) each run a loop
// with no test per row; int64 and float64 compile to separate code, so
// being generic costs these loops nothing.
func arith[T int64 | float64](s *Scratch, op string, a, b Vec, xs, ys, out []T, rem func(x, y T) T, zeroNull bool) []bool {
	valid := bothValid(s, a, b, len(out))
	switch {
	case !a.Const && !b.Const:
		switch op {
		case "+":
			for i := range out {
				out[i] = xs[i] + ys[i]
			}
			return valid
		case "-":
			for i := range out {
				out[i] = xs[i] - ys[i]
			}
			return valid
		case "*":
			for i := range out {
				out[i] = xs[i] * ys[i]
			}
			return valid
		}
	case a.Const && !b.Const:
		c := xs[0]
		switch op {
		case "+":
			for i := range out {
				out[i] = c + ys[i]
			}
			return valid
		case "-":
			for i := range out {
				out[i] = c - ys[i]
			}
			return valid
		case "*":
			for i := range out {
				out[i] = c * ys[i]
			}
			return valid
		}
	case !a.Const && b.Const:
		c := ys[0]
		switch op {
		case "+":
			for i := range out {
				out[i] = xs[i] + c
			}
			return valid
		case "-":
			for i := range out {
				out[i] = xs[i] - c
			}
			return valid
		case "*":
			for i := range out {
				out[i] = xs[i] * c
			}
			return valid
		}
	}
	for i := range out {
		x, y := xs[at(a, i)], ys[at(b, i)]
		switch op {
		case "+":
			out[i] = x + y
		case "-":
			out[i] = x - y
		case "*":
			out[i] = x * y
		case "/", "%":
			if y == 0 && zeroNull {
				if valid == nil {
					valid = allValid(s, len(out))
				}
				valid[i] = false
				out[i] = 0
				continue
			}
			if op == "/" {
				out[i] = x / y
			} else {
				out[i] = rem(x, y)
			}
		}
	}
	return valid
}
