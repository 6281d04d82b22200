package exec

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// kind is the type of an expression's values. Integers of every width
// are int64, floats float64, dates days since 1970-01-01 and timestamps
// nanoseconds since 1970-01-01 UTC.
type kind uint8

const (
	kBool kind = iota + 1
	kInt
	kFloat
	kString
	kDate
	kTime
)

func (k kind) String() string {
	return [...]string{"", "boolean", "integer", "float", "string", "date", "timestamp"}[k]
}

func (k kind) numeric() bool { return k == kInt || k == kFloat }

// vec is the value of an expression over a batch. A constant holds one
// value and stands for every row. valid is nil when every value is valid.
type vec struct {
	k     kind
	konst bool
	b     []bool
	i     []int64
	f     []float64
	s     func(int) string
	valid []bool
	// own says f was made by the evaluation (not a column's memory), so
	// the operation that consumes it may write its result over it.
	own bool
}

func (v vec) isValid(i int) bool { return v.valid == nil || v.valid[i] }

// compiled is an expression bound to a schema.
type compiled struct {
	k    kind
	eval func(rec arrow.RecordBatch) vec
}

type compiler struct {
	input  string
	schema *arrow.Schema
	stage  string
	cols   map[int]bool // columns the expression reads
}

func (c *compiler) errAt(n node, format string, a ...any) error {
	return &ParseError{Input: c.input, Pos: n.position(), Msg: fmt.Sprintf(format, a...)}
}

// compileExpr parses and binds an expression for a stage.
func compileExpr(stage, input string, schema *arrow.Schema) (*compiled, error) {
	n, err := parseExpr(input)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", stage, err)
	}
	c := &compiler{input: input, schema: schema, stage: stage, cols: map[int]bool{}}
	e, err := c.compile(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", stage, err)
	}
	return e, nil
}

func (c *compiler) compile(n node) (*compiled, error) {
	switch n := n.(type) {
	case *colNode:
		return c.column(n)
	case *litNode:
		return c.literal(n)
	case *unaryNode:
		x, err := c.compile(n.x)
		if err != nil {
			return nil, err
		}
		if n.op == "not" {
			if x.k != kBool {
				return nil, c.errAt(n, "not needs a boolean, got a %s", x.k)
			}
			return &compiled{kBool, func(r arrow.RecordBatch) vec { return notVec(x.eval(r)) }}, nil
		}
		if !x.k.numeric() {
			return nil, c.errAt(n, "- needs a number, got a %s", x.k)
		}
		return &compiled{x.k, func(r arrow.RecordBatch) vec { return negVec(x.eval(r)) }}, nil
	case *isNullNode:
		x, err := c.compile(n.x)
		if err != nil {
			return nil, err
		}
		return &compiled{kBool, func(r arrow.RecordBatch) vec { return isNullVec(x.eval(r), n.not, int(r.NumRows())) }}, nil
	case *binaryNode:
		return c.binary(n)
	case *callNode:
		return c.call(n)
	}
	return nil, c.errAt(n, "unsupported expression")
}

func (c *compiler) column(n *colNode) (*compiled, error) {
	i, err := colIndex(c.stage, c.schema, n.name)
	if err != nil {
		return nil, c.errAt(n, "no column %q in the input (columns: %s)", n.name, columnList(c.schema))
	}
	c.cols[i] = true
	dt := c.schema.Field(i).Type
	k, load := columnLoader(dt)
	if load == nil {
		return nil, c.errAt(n, "column %q has type %s, which expressions do not support", n.name, dt)
	}
	return &compiled{k, func(r arrow.RecordBatch) vec { return load(r.Column(i)) }}, nil
}

func columnList(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

func validity(a arrow.Array) []bool {
	if a.NullN() == 0 {
		return nil
	}
	v := make([]bool, a.Len())
	for i := range v {
		v[i] = a.IsValid(i)
	}
	return v
}

func widen[T int8 | int16 | int32 | uint8 | uint16 | uint32 | uint64](vals []T) []int64 {
	out := make([]int64, len(vals))
	for i, v := range vals {
		out[i] = int64(v)
	}
	return out
}

func scale(vals []int64, by int64) []int64 {
	out := make([]int64, len(vals))
	for i, v := range vals {
		out[i] = v * by
	}
	return out
}

// columnLoader returns how to read a column of type dt as a vec, or nil.
func columnLoader(dt arrow.DataType) (kind, func(arrow.Array) vec) {
	ints := func(f func(a arrow.Array) []int64, k kind) (kind, func(arrow.Array) vec) {
		return k, func(a arrow.Array) vec { return vec{k: k, i: f(a), valid: validity(a)} }
	}
	switch t := dt.(type) {
	case *arrow.Int64Type:
		return ints(func(a arrow.Array) []int64 { return a.(*array.Int64).Int64Values() }, kInt)
	case *arrow.Int32Type:
		return ints(func(a arrow.Array) []int64 { return widen(a.(*array.Int32).Int32Values()) }, kInt)
	case *arrow.Int16Type:
		return ints(func(a arrow.Array) []int64 { return widen(a.(*array.Int16).Int16Values()) }, kInt)
	case *arrow.Int8Type:
		return ints(func(a arrow.Array) []int64 { return widen(a.(*array.Int8).Int8Values()) }, kInt)
	case *arrow.Uint64Type:
		return ints(func(a arrow.Array) []int64 { return widen(a.(*array.Uint64).Uint64Values()) }, kInt)
	case *arrow.Uint32Type:
		return ints(func(a arrow.Array) []int64 { return widen(a.(*array.Uint32).Uint32Values()) }, kInt)
	case *arrow.Uint16Type:
		return ints(func(a arrow.Array) []int64 { return widen(a.(*array.Uint16).Uint16Values()) }, kInt)
	case *arrow.Uint8Type:
		return ints(func(a arrow.Array) []int64 { return widen(a.(*array.Uint8).Uint8Values()) }, kInt)
	case *arrow.Date32Type:
		return ints(func(a arrow.Array) []int64 {
			return widen(arrow.Int32Traits.CastFromBytes(arrow.Date32Traits.CastToBytes(a.(*array.Date32).Date32Values())))
		}, kDate)
	case *arrow.Date64Type:
		return ints(func(a arrow.Array) []int64 {
			v := a.(*array.Date64).Date64Values()
			out := make([]int64, len(v))
			for i, d := range v {
				out[i] = int64(d) / 86_400_000
			}
			return out
		}, kDate)
	case *arrow.TimestampType:
		by := map[arrow.TimeUnit]int64{arrow.Second: 1e9, arrow.Millisecond: 1e6, arrow.Microsecond: 1e3, arrow.Nanosecond: 1}[t.Unit]
		return ints(func(a arrow.Array) []int64 {
			v := arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(a.(*array.Timestamp).TimestampValues()))
			if by == 1 {
				return v
			}
			return scale(v, by)
		}, kTime)
	case *arrow.Float64Type:
		return kFloat, func(a arrow.Array) vec {
			return vec{k: kFloat, f: a.(*array.Float64).Float64Values(), valid: validity(a)}
		}
	case *arrow.Float32Type:
		return kFloat, func(a arrow.Array) vec {
			v := a.(*array.Float32).Float32Values()
			out := make([]float64, len(v))
			for i, x := range v {
				out[i] = float64(x)
			}
			return vec{k: kFloat, f: out, valid: validity(a)}
		}
	case *arrow.BooleanType:
		return kBool, func(a arrow.Array) vec {
			b := a.(*array.Boolean)
			out := make([]bool, b.Len())
			for i := range out {
				out[i] = b.Value(i)
			}
			return vec{k: kBool, b: out, valid: validity(a)}
		}
	}
	if s := stringAccessor(dt); s != nil {
		return kString, func(a arrow.Array) vec { return vec{k: kString, s: s(a), valid: validity(a)} }
	}
	return 0, nil
}

// stringAccessor returns how to read values of a string-like column
// (string, binary, their large forms, and dictionaries of those).
func stringAccessor(dt arrow.DataType) func(arrow.Array) func(int) string {
	switch t := dt.(type) {
	case *arrow.StringType:
		return func(a arrow.Array) func(int) string { return a.(*array.String).Value }
	case *arrow.LargeStringType:
		return func(a arrow.Array) func(int) string { return a.(*array.LargeString).Value }
	case *arrow.StringViewType:
		return func(a arrow.Array) func(int) string { return a.(*array.StringView).Value }
	case *arrow.BinaryType:
		return func(a arrow.Array) func(int) string { return a.(*array.Binary).ValueString }
	case *arrow.LargeBinaryType:
		return func(a arrow.Array) func(int) string { return a.(*array.LargeBinary).ValueString }
	case *arrow.DictionaryType:
		inner := stringAccessor(t.ValueType)
		if inner == nil {
			return nil
		}
		return func(a arrow.Array) func(int) string {
			d := a.(*array.Dictionary)
			vals := inner(d.Dictionary())
			return func(i int) string { return vals(d.GetValueIndex(i)) }
		}
	}
	return nil
}

func konst(v vec) vec { v.konst = true; return v }

func (c *compiler) literal(n *litNode) (*compiled, error) {
	t := n.tok
	var v vec
	switch {
	case n.kind == "date":
		d, err := time.Parse("2006-01-02", t.text)
		if err != nil {
			return nil, c.errAt(n, "bad date %q: want YYYY-MM-DD", t.text)
		}
		v = vec{k: kDate, i: []int64{d.Unix() / 86400}}
	case n.kind == "timestamp":
		ts, err := parseTimestamp(t.text)
		if err != nil {
			return nil, c.errAt(n, "bad timestamp %q: want YYYY-MM-DD[ HH:MM:SS[.fraction]]", t.text)
		}
		v = vec{k: kTime, i: []int64{ts}}
	case t.kind == tInt:
		x, err := strconv.ParseInt(strings.ReplaceAll(t.text, "_", ""), 10, 64)
		if err != nil {
			return nil, c.errAt(n, "integer %s out of range", t.text)
		}
		v = vec{k: kInt, i: []int64{x}}
	case t.kind == tFloat:
		x, err := strconv.ParseFloat(strings.ReplaceAll(t.text, "_", ""), 64)
		if err != nil {
			return nil, c.errAt(n, "bad number %s", t.text)
		}
		v = vec{k: kFloat, f: []float64{x}}
	case t.kind == tString:
		s := t.text
		v = vec{k: kString, s: func(int) string { return s }}
	default: // true, false
		v = vec{k: kBool, b: []bool{t.text == "true"}}
	}
	v = konst(v)
	return &compiled{v.k, func(arrow.RecordBatch) vec { return v }}, nil
}

func parseTimestamp(s string) (int64, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixNano(), nil
		}
	}
	return 0, fmt.Errorf("bad timestamp")
}

func (c *compiler) binary(n *binaryNode) (*compiled, error) {
	x, err := c.compile(n.x)
	if err != nil {
		return nil, err
	}
	y, err := c.compile(n.y)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case "and", "or":
		if x.k != kBool || y.k != kBool {
			return nil, c.errAt(n, "%s needs booleans on both sides, got %s and %s", n.op, x.k, y.k)
		}
		and := n.op == "and"
		return &compiled{kBool, func(r arrow.RecordBatch) vec { return logicVec(and, x.eval(r), y.eval(r), int(r.NumRows())) }}, nil
	case "=", "!=", "<", "<=", ">", ">=":
		return c.comparison(n, x, y)
	}
	return c.arithmetic(n, x, y)
}

func (c *compiler) comparison(n *binaryNode, x, y *compiled) (*compiled, error) {
	op := n.op
	mk := func(f func(a, b vec, n int) vec) (*compiled, error) {
		return &compiled{kBool, func(r arrow.RecordBatch) vec { return f(x.eval(r), y.eval(r), int(r.NumRows())) }}, nil
	}
	switch {
	case x.k == kInt && y.k == kInt, x.k == kDate && y.k == kDate, x.k == kTime && y.k == kTime:
		return mk(func(a, b vec, n int) vec { return compareVec(op, a.i, b.i, a, b, n) })
	case x.k.numeric() && y.k.numeric():
		return mk(func(a, b vec, n int) vec { return compareVec(op, asFloat(a).f, asFloat(b).f, a, b, n) })
	case x.k == kDate && y.k == kTime || x.k == kTime && y.k == kDate:
		return mk(func(a, b vec, n int) vec { return compareVec(op, asTime(a).i, asTime(b).i, a, b, n) })
	case x.k == kString && y.k == kString:
		return mk(func(a, b vec, n int) vec { return compareStrings(op, a, b, n) })
	case x.k == kBool && y.k == kBool && (op == "=" || op == "!="):
		return mk(func(a, b vec, n int) vec { return compareBools(op == "=", a, b, n) })
	}
	hint := ""
	if (x.k == kDate || x.k == kTime) && y.k == kString || (y.k == kDate || y.k == kTime) && x.k == kString {
		hint = ": write a date as date 'YYYY-MM-DD' (or timestamp 'YYYY-MM-DD HH:MM:SS')"
	}
	return nil, c.errAt(n, "cannot compare a %s with a %s%s", x.k, y.k, hint)
}

func (c *compiler) arithmetic(n *binaryNode, x, y *compiled) (*compiled, error) {
	op := n.op
	mk := func(k kind, f func(a, b vec, n int) vec) (*compiled, error) {
		return &compiled{k, func(r arrow.RecordBatch) vec {
			v := f(x.eval(r), y.eval(r), int(r.NumRows()))
			v.k = k
			return v
		}}, nil
	}
	switch {
	case x.k == kInt && y.k == kInt && op != "/":
		return mk(kInt, func(a, b vec, n int) vec { return arithInt(op, a, b, n) })
	case x.k.numeric() && y.k.numeric():
		return mk(kFloat, func(a, b vec, n int) vec { return arithFloat(op, asFloat(a), asFloat(b), n) })
	case x.k == kDate && y.k == kInt && (op == "+" || op == "-"), x.k == kInt && y.k == kDate && op == "+":
		return mk(kDate, func(a, b vec, n int) vec { return arithInt(op, a, b, n) })
	case x.k == kDate && y.k == kDate && op == "-":
		return mk(kInt, func(a, b vec, n int) vec { return arithInt(op, a, b, n) })
	}
	return nil, c.errAt(n, "cannot apply %s to a %s and a %s", op, x.k, y.k)
}

func (c *compiler) call(n *callNode) (*compiled, error) {
	args := make([]*compiled, len(n.args))
	for i, a := range n.args {
		x, err := c.compile(a)
		if err != nil {
			return nil, err
		}
		args[i] = x
	}
	want := func(kinds ...kind) error {
		if len(args) != len(kinds) {
			return c.errAt(n, "%s takes %d argument(s), got %d", n.fn, len(kinds), len(args))
		}
		for i, k := range kinds {
			if args[i].k != k && !(k == kFloat && args[i].k.numeric()) {
				return c.errAt(n.args[i], "argument %d of %s must be a %s, got a %s", i+1, n.fn, k, args[i].k)
			}
		}
		return nil
	}
	switch n.fn {
	case "starts_with", "ends_with", "contains":
		if err := want(kString, kString); err != nil {
			return nil, err
		}
		f := map[string]func(s, p string) bool{"starts_with": strings.HasPrefix, "ends_with": strings.HasSuffix, "contains": strings.Contains}[n.fn]
		return &compiled{kBool, func(r arrow.RecordBatch) vec {
			return stringPredicate(f, args[0].eval(r), args[1].eval(r), int(r.NumRows()))
		}}, nil
	case "abs":
		if err := want(kFloat); err != nil {
			return nil, err
		}
		x := args[0]
		return &compiled{x.k, func(r arrow.RecordBatch) vec { return absVec(x.eval(r)) }}, nil
	}
	return nil, c.errAt(n, "unknown function %s (there are starts_with, ends_with, contains, abs)", n.fn)
}

// --- evaluation -----------------------------------------------------------

func length(v vec, n int) int {
	if v.konst {
		return 1
	}
	return n
}

func bothValid(a, b vec, n int) []bool {
	switch {
	case a.valid == nil && b.valid == nil:
		return nil
	case a.konst && b.konst:
		return []bool{a.isValid(0) && b.isValid(0)}
	}
	out := make([]bool, n)
	for i := range out {
		out[i] = a.isValid(at(a, i)) && b.isValid(at(b, i))
	}
	return out
}

func at(v vec, i int) int {
	if v.konst {
		return 0
	}
	return i
}

func asFloat(v vec) vec {
	if v.k == kFloat {
		return v
	}
	f := make([]float64, len(v.i))
	for i, x := range v.i {
		f[i] = float64(x)
	}
	return vec{k: kFloat, konst: v.konst, f: f, valid: v.valid, own: true}
}

func asTime(v vec) vec {
	if v.k == kTime {
		return v
	}
	return vec{k: kTime, konst: v.konst, i: scale(v.i, 86_400e9), valid: v.valid}
}

func compareVec[T cmp.Ordered](op string, xs, ys []T, a, b vec, n int) vec {
	if a.konst && b.konst {
		n = 1
	}
	out := make([]bool, n)
	switch {
	case a.konst && !b.konst:
		compareConst(flip(op), ys, xs[0], out)
	case b.konst && !a.konst:
		compareConst(op, xs, ys[0], out)
	default:
		compareSlices(op, xs[:n], ys[:n], out)
	}
	return vec{k: kBool, konst: a.konst && b.konst, b: out, valid: bothValid(a, b, n)}
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

func compareStrings(op string, a, b vec, n int) vec {
	if a.konst && b.konst {
		n = 1
	}
	out := make([]bool, n)
	for i := range out {
		c := strings.Compare(a.s(at(a, i)), b.s(at(b, i)))
		switch op {
		case "=":
			out[i] = c == 0
		case "!=":
			out[i] = c != 0
		case "<":
			out[i] = c < 0
		case "<=":
			out[i] = c <= 0
		case ">":
			out[i] = c > 0
		case ">=":
			out[i] = c >= 0
		}
	}
	return vec{k: kBool, konst: a.konst && b.konst, b: out, valid: bothValid(a, b, n)}
}

func compareBools(eq bool, a, b vec, n int) vec {
	if a.konst && b.konst {
		n = 1
	}
	out := make([]bool, n)
	for i := range out {
		out[i] = (a.b[at(a, i)] == b.b[at(b, i)]) == eq
	}
	return vec{k: kBool, konst: a.konst && b.konst, b: out, valid: bothValid(a, b, n)}
}

func stringPredicate(f func(s, p string) bool, a, b vec, n int) vec {
	if a.konst && b.konst {
		n = 1
	}
	out := make([]bool, n)
	for i := range out {
		if a.isValid(at(a, i)) && b.isValid(at(b, i)) {
			out[i] = f(a.s(at(a, i)), b.s(at(b, i)))
		}
	}
	return vec{k: kBool, konst: a.konst && b.konst, b: out, valid: bothValid(a, b, n)}
}

// logicVec is SQL's three-valued and/or: false and null is false, true
// or null is true.
func logicVec(and bool, a, b vec, n int) vec {
	if a.konst && b.konst {
		n = 1
	}
	out := make([]bool, n)
	if a.valid == nil && b.valid == nil {
		for i := range out {
			if and {
				out[i] = a.b[at(a, i)] && b.b[at(b, i)]
			} else {
				out[i] = a.b[at(a, i)] || b.b[at(b, i)]
			}
		}
		return vec{k: kBool, konst: a.konst && b.konst, b: out}
	}
	valid := make([]bool, n)
	for i := range out {
		av, bv := a.isValid(at(a, i)), b.isValid(at(b, i))
		ab, bb := av && a.b[at(a, i)], bv && b.b[at(b, i)]
		if and {
			switch {
			case av && !ab || bv && !bb:
				valid[i] = true
			case av && bv:
				out[i], valid[i] = true, true
			}
		} else {
			switch {
			case ab || bb:
				out[i], valid[i] = true, true
			case av && bv:
				valid[i] = true
			}
		}
	}
	return vec{k: kBool, konst: a.konst && b.konst, b: out, valid: valid}
}

func notVec(a vec) vec {
	out := make([]bool, len(a.b))
	for i, x := range a.b {
		out[i] = !x
	}
	return vec{k: kBool, konst: a.konst, b: out, valid: a.valid}
}

func negVec(a vec) vec {
	if a.k == kFloat {
		out := make([]float64, len(a.f))
		for i, x := range a.f {
			out[i] = -x
		}
		return vec{k: kFloat, konst: a.konst, f: out, valid: a.valid}
	}
	out := make([]int64, len(a.i))
	for i, x := range a.i {
		out[i] = -x
	}
	return vec{k: a.k, konst: a.konst, i: out, valid: a.valid}
}

func absVec(a vec) vec {
	if a.k == kFloat {
		out := make([]float64, len(a.f))
		for i, x := range a.f {
			out[i] = math.Abs(x)
		}
		return vec{k: kFloat, konst: a.konst, f: out, valid: a.valid}
	}
	out := make([]int64, len(a.i))
	for i, x := range a.i {
		if x < 0 {
			x = -x
		}
		out[i] = x
	}
	return vec{k: a.k, konst: a.konst, i: out, valid: a.valid}
}

func isNullVec(a vec, not bool, n int) vec {
	if a.konst {
		return vec{k: kBool, konst: true, b: []bool{a.isValid(0) == not}}
	}
	out := make([]bool, n)
	for i := range out {
		out[i] = a.isValid(i) == not
	}
	return vec{k: kBool, b: out}
}

// arithInt adds, subtracts, multiplies or takes remainders of integers
// (and days); a remainder by zero is null.
func arithInt(op string, a, b vec, n int) vec {
	if a.konst && b.konst {
		n = 1
	}
	out := make([]int64, n)
	valid := bothValid(a, b, n)
	xs, ys := a.i, b.i
	switch {
	case op == "+" && !a.konst && !b.konst:
		for i := range out {
			out[i] = xs[i] + ys[i]
		}
	case op == "-" && !a.konst && !b.konst:
		for i := range out {
			out[i] = xs[i] - ys[i]
		}
	case op == "*" && !a.konst && !b.konst:
		for i := range out {
			out[i] = xs[i] * ys[i]
		}
	default:
		for i := range out {
			x, y := xs[at(a, i)], ys[at(b, i)]
			switch op {
			case "+":
				out[i] = x + y
			case "-":
				out[i] = x - y
			case "*":
				out[i] = x * y
			case "%":
				if y == 0 {
					if valid == nil {
						valid = allValid(n)
					}
					valid[i] = false
					continue
				}
				out[i] = x % y
			}
		}
	}
	return vec{k: kInt, konst: a.konst && b.konst, i: out, valid: valid}
}

func allValid(n int) []bool {
	v := make([]bool, n)
	for i := range v {
		v[i] = true
	}
	return v
}

// arithFloat is float arithmetic; division or remainder by zero is null.
func arithFloat(op string, a, b vec, n int) vec {
	if a.konst && b.konst {
		n = 1
	}
	// Each element is read before its result is written, so a result can
	// go over an operand the evaluation made: an expression like
	// x * (1 - y) * (1 + z) then makes two slices, not four.
	var out []float64
	switch {
	case a.own && !a.konst && len(a.f) >= n:
		out = a.f[:n]
	case b.own && !b.konst && len(b.f) >= n:
		out = b.f[:n]
	default:
		out = make([]float64, n)
	}
	valid := bothValid(a, b, n)
	xs, ys := a.f, b.f
	switch {
	case !a.konst && !b.konst && op == "+":
		for i := range out {
			out[i] = xs[i] + ys[i]
		}
	case !a.konst && !b.konst && op == "-":
		for i := range out {
			out[i] = xs[i] - ys[i]
		}
	case !a.konst && !b.konst && op == "*":
		for i := range out {
			out[i] = xs[i] * ys[i]
		}
	case a.konst && !b.konst && op == "-":
		c := xs[0]
		for i := range out {
			out[i] = c - ys[i]
		}
	case a.konst && !b.konst && op == "+":
		c := xs[0]
		for i := range out {
			out[i] = c + ys[i]
		}
	case !a.konst && b.konst && op == "*":
		c := ys[0]
		for i := range out {
			out[i] = xs[i] * c
		}
	default:
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
				if y == 0 {
					if valid == nil {
						valid = allValid(n)
					}
					valid[i] = false
					out[i] = 0
					continue
				}
				if op == "/" {
					out[i] = x / y
				} else {
					out[i] = math.Mod(x, y)
				}
			}
		}
	}
	return vec{k: kFloat, konst: a.konst && b.konst, f: out, valid: valid, own: true}
}
