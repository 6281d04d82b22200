package expr

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Expr is an expression bound to a schema.
type Expr struct {
	// Kind is the type of its values.
	Kind   Kind
	dec    Dec
	eval   func(rec arrow.RecordBatch, s *Scratch) Vec
	node   Node
	input  string
	schema *arrow.Schema
	cols   map[int]bool
}

// Eval evaluates the expression over a batch of the schema it was bound
// to. The result may share the batch's memory. The error is a result
// past its type (*OverflowError: a decimal past its precision, an
// integer past 64 bits), as DuckDB's.
func (e *Expr) Eval(rec arrow.RecordBatch) (Vec, error) { return e.EvalScratch(rec, nil) }

// EvalScratch is Eval with the memory the evaluation makes taken from s
// (a nil s is Eval). The result is valid until the next EvalScratch with
// the same s: a caller evaluating batch after batch keeps one Scratch
// per goroutine, and its working set stays that of one batch instead of
// fresh memory for every batch.
func (e *Expr) EvalScratch(rec arrow.RecordBatch, s *Scratch) (v Vec, err error) {
	s.reset()
	defer func() {
		if r := recover(); r != nil {
			o, ok := r.(*OverflowError)
			if !ok {
				panic(r)
			}
			err = o
		}
	}()
	return e.eval(rec, s), nil
}

// DataType is the Arrow type of the expression's values: DataType(Kind),
// or a decimal of its precision and scale.
func (e *Expr) DataType() arrow.DataType {
	return TypeOf(Vec{K: e.Kind, Dec: e.dec})
}

// Columns are the indices in the schema of the columns it reads, in
// schema order.
func (e *Expr) Columns() []int {
	var out []int
	for i := range e.schema.NumFields() {
		if e.cols[i] {
			out = append(out, i)
		}
	}
	return out
}

// String is the expression as it parses back.
func (e *Expr) String() string { return String(e.node) }

// Compile parses input and binds it to schema.
func Compile(input string, schema *arrow.Schema) (*Expr, error) {
	n, err := Parse(input)
	if err != nil {
		return nil, err
	}
	return Bind(input, n, schema)
}

// CompileFilter is Compile for a condition: its kind must be boolean.
func CompileFilter(input string, schema *arrow.Schema) (*Expr, error) {
	e, err := Compile(input, schema)
	if err != nil {
		return nil, err
	}
	if e.Kind != KindBool {
		return nil, &Error{Input: input, Pos: e.node.position(), Msg: fmt.Sprintf("this is %s, not a condition", e.Kind.A())}
	}
	return e, nil
}

// Bind checks the columns and types of n, parsed from input, against
// schema and prepares its evaluation.
func Bind(input string, n Node, schema *arrow.Schema) (*Expr, error) {
	c := &compiler{input: input, schema: schema, cols: map[int]bool{}}
	x, err := c.compile(n)
	if err != nil {
		return nil, err
	}
	return &Expr{Kind: x.k, dec: x.dec, eval: x.eval, node: n, input: input, schema: schema, cols: c.cols}, nil
}

// compiled is a node bound to the schema.
type compiled struct {
	k Kind
	// dec is a decimal's type; for an integer, its precision as one (0
	// for 19 digits).
	dec  Dec
	eval func(rec arrow.RecordBatch, s *Scratch) Vec
	// sel, where set, evaluates only the rows where sel[i] holds, leaving
	// the value of the others unspecified (never an error): an and gives
	// its second operand only the rows its first left undecided, so a
	// test that reads strings runs on the rows the cheap tests kept.
	sel func(rec arrow.RecordBatch, s *Scratch, sel []bool) Vec
	// costly says the test reads strings row by row: an and evaluates
	// its costly operands after the others (conj).
	costly bool
	// conj are the operands of a chain of ands, in the order evaluated.
	conj []*compiled
	// narrow, where set, reads a column of 32-bit integers (int32,
	// date32) as it is, and its validity: a comparison need not widen it
	// (narrowComparison).
	narrow func(rec arrow.RecordBatch, s *Scratch) ([]int32, []bool)
	// konst is the value of a constant.
	konst *Vec
}

// evalSel evaluates x on the rows of sel (nil: all), or on all of them
// where x cannot select.
func (x *compiled) evalSel(r arrow.RecordBatch, s *Scratch, sel []bool) Vec {
	if sel != nil && x.sel != nil {
		return x.sel(r, s, sel)
	}
	return x.eval(r, s)
}

// selective is a costly boolean test that can skip rows: f with sel nil
// evaluates every row.
func selective(f func(r arrow.RecordBatch, s *Scratch, sel []bool) Vec) *compiled {
	return &compiled{k: KindBool, costly: true, sel: f, eval: func(r arrow.RecordBatch, s *Scratch) Vec { return f(r, s, nil) }}
}

// decOf is x's values' type as a decimal: an integer's has scale 0.
func decOf(x *compiled) Dec {
	if x.k == KindInt {
		return Dec{P: cmp.Or(x.dec.P, 19)}
	}
	return x.dec
}

type compiler struct {
	input  string
	schema *arrow.Schema
	cols   map[int]bool // columns the expression reads
	// months are the intervals of months or years: constants that only a
	// date or timestamp's + and - take (calendar arithmetic, not days).
	months map[*compiled]int64
}

func (c *compiler) errAt(n Node, format string, a ...any) error {
	return &Error{Input: c.input, Pos: n.position(), Msg: fmt.Sprintf(format, a...)}
}

// compile binds n; an interval of months is refused here, as it is
// only an operand of + and - (see arithmetic).
func (c *compiler) compile(n Node) (*compiled, error) {
	x, err := c.compileAny(n)
	if _, ok := c.months[x]; ok && err == nil {
		return nil, c.errAt(n, "an interval of months or years can only be added to or subtracted from a date or timestamp")
	}
	return stamped(x), err
}

// stamped is x with its decimal type on every value it makes, so the
// operations after it read the scale from the value.
func stamped(x *compiled) *compiled {
	if x == nil || x.k != KindDecimal {
		return x
	}
	eval, d := x.eval, x.dec
	return &compiled{k: x.k, dec: d, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
		v := eval(r, s)
		v.Dec = d
		return v
	}}
}

func (c *compiler) compileAny(n Node) (*compiled, error) {
	switch n := n.(type) {
	case *caseWhen:
		return c.caseWhen(n)
	case *cast:
		return c.cast(n)
	case *Column:
		return c.column(n)
	case *literal:
		return c.literal(n)
	case *unary:
		x, err := c.compile(n.x)
		if err != nil {
			return nil, err
		}
		if n.op == "not" {
			if x.k != KindBool {
				return nil, c.errAt(n, "not needs a boolean, got %s", x.k.A())
			}
			return notOf(x), nil
		}
		if !x.k.Numeric() && x.k != KindInterval {
			return nil, c.errAt(n, "- needs a number, got %s", x.k.A())
		}
		return &compiled{k: x.k, dec: x.dec, eval: func(r arrow.RecordBatch, s *Scratch) Vec { return negVec(s, x.eval(r, s)) }}, nil
	case *isNull:
		x, err := c.compile(n.x)
		if err != nil {
			return nil, err
		}
		return &compiled{k: KindBool, eval: func(r arrow.RecordBatch, s *Scratch) Vec { return isNullVec(s, x.eval(r, s), n.not, int(r.NumRows())) }}, nil
	case *binary:
		return c.binary(n)
	case *between:
		lo, err := c.comparison(&binary{op: ">=", x: n.x, y: n.lo, pos: n.pos})
		if err != nil {
			return nil, err
		}
		hi, err := c.comparison(&binary{op: "<=", x: n.x, y: n.hi, pos: n.pos})
		if err != nil {
			return nil, err
		}
		return maybeNot(andOr(true, lo, hi), n.not), nil
	case *inList:
		if in, err := c.inStringList(n); in != nil || err != nil {
			return in, err
		}
		var acc *compiled
		for _, item := range n.list {
			eq, err := c.comparison(&binary{op: "=", x: n.x, y: item, pos: item.position()})
			if err != nil {
				return nil, err
			}
			if acc == nil {
				acc = eq
			} else {
				acc = andOr(false, acc, eq)
			}
		}
		return maybeNot(acc, n.not), nil
	case *like:
		x, err := c.compile(n.x)
		if err != nil {
			return nil, err
		}
		if x.k != KindString {
			return nil, c.errAt(n, "like needs a string, got %s", x.k.A())
		}
		m := likeMatcher(n.pattern)
		return maybeNot(selective(func(r arrow.RecordBatch, s *Scratch, sel []bool) Vec {
			return stringMatch(s, m, x.eval(r, s), int(r.NumRows()), sel)
		}), n.not), nil
	case *Call:
		return c.call(n)
	}
	return nil, c.errAt(n, "unsupported expression")
}

// inStringList compiles a string in a list of quoted constants as one
// pass over the string (inStrings); nil when n is another list.
func (c *compiler) inStringList(n *inList) (*compiled, error) {
	set := make([]string, len(n.list))
	for i, item := range n.list {
		lit, ok := item.(*literal)
		if !ok || lit.kind != "" || lit.tok.kind != tString {
			return nil, nil
		}
		set[i] = lit.tok.text
	}
	x, err := c.compile(n.x)
	if err != nil || x.k != KindString {
		return nil, err
	}
	member := stringSet(set)
	return maybeNot(selective(func(r arrow.RecordBatch, s *Scratch, sel []bool) Vec {
		return inStrings(s, x.eval(r, s), member, int(r.NumRows()), sel)
	}), n.not), nil
}

func notOf(x *compiled) *compiled {
	f := func(r arrow.RecordBatch, s *Scratch, sel []bool) Vec { return notVec(s, x.evalSel(r, s, sel)) }
	out := &compiled{k: KindBool, costly: x.costly, eval: func(r arrow.RecordBatch, s *Scratch) Vec { return f(r, s, nil) }}
	if x.sel != nil {
		out.sel = f
	}
	return out
}

func maybeNot(x *compiled, not bool) *compiled {
	if not {
		return notOf(x)
	}
	return x
}

// andOr is x and y, or x or y. The second operand is evaluated only on
// the rows the first leaves undecided where it can select (an and's
// where the first is true or null); a chain of ands evaluates its costly
// operands last, in their order, so that they see the fewest rows: and
// is commutative, and every operand but the selecting ones is evaluated
// on every row whatever the order, so the errors it can raise are the
// same.
func andOr(and bool, x, y *compiled) *compiled {
	if !and {
		return logic(false, x, y)
	}
	ops := append(append([]*compiled(nil), conjOf(x)...), conjOf(y)...)
	ordered := make([]*compiled, 0, len(ops))
	for _, costly := range []bool{false, true} {
		for _, o := range ops {
			if o.costly == costly {
				ordered = append(ordered, o)
			}
		}
	}
	acc := ordered[0]
	for i, o := range ordered[1:] {
		acc = logic(true, acc, o)
		acc.conj = ordered[:i+2]
	}
	return acc
}

func conjOf(x *compiled) []*compiled {
	if x.conj != nil {
		return x.conj
	}
	return []*compiled{x}
}

func logic(and bool, x, y *compiled) *compiled {
	f := func(r arrow.RecordBatch, s *Scratch, outer []bool) Vec {
		n := int(r.NumRows())
		a := x.evalSel(r, s, outer)
		sel := outer
		if y.sel != nil && !a.Const {
			sel = undecided(s, and, a, outer, n)
		}
		return logicVec(s, and, a, y.evalSel(r, s, sel), n)
	}
	out := &compiled{k: KindBool, costly: x.costly || y.costly, eval: func(r arrow.RecordBatch, s *Scratch) Vec { return f(r, s, nil) }}
	if x.sel != nil || y.sel != nil {
		out.sel = f
	}
	return out
}

// undecided are the rows of outer (nil: all) where a leaves an and (or)
// undecided: a is true (false) or null.
func undecided(s *Scratch, and bool, a Vec, outer []bool, n int) []bool {
	keep := s.bools(n)
	for i := range keep {
		v := a.B[i]
		if a.Valid != nil && !a.Valid[i] {
			v = and
		}
		keep[i] = v == and && (outer == nil || outer[i])
	}
	return keep
}

func schemaNames(s *arrow.Schema) []string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return names
}

func (c *compiler) column(n *Column) (*compiled, error) {
	idx := c.schema.FieldIndices(n.Name)
	if len(idx) == 0 {
		ce := &ColumnError{Column: n.Name, Have: schemaNames(c.schema)}
		return nil, &Error{Input: c.input, Pos: n.Pos, Msg: ce.Error(), Err: ce}
	}
	i := idx[0]
	dt := c.schema.Field(i).Type
	k, d, load := loader(dt)
	if load == nil {
		return nil, c.errAt(n, "column %q has type %s, which expressions do not support", n.Name, dt)
	}
	c.cols[i] = true
	x := &compiled{k: k, dec: d, eval: func(r arrow.RecordBatch, s *Scratch) Vec { return s.load(r.Column(i), load) }}
	switch dt.(type) {
	case *arrow.Int32Type:
		x.narrow = func(r arrow.RecordBatch, s *Scratch) ([]int32, []bool) {
			a := r.Column(i)
			return a.(*array.Int32).Int32Values(), validity(s, a)
		}
	case *arrow.Date32Type:
		x.narrow = func(r arrow.RecordBatch, s *Scratch) ([]int32, []bool) {
			a := r.Column(i)
			return arrow.Int32Traits.CastFromBytes(arrow.Date32Traits.CastToBytes(a.(*array.Date32).Date32Values())), validity(s, a)
		}
	}
	return x, nil
}

func constant(v Vec) *compiled {
	v.Const = true
	return &compiled{k: v.K, dec: v.Dec, eval: func(arrow.RecordBatch, *Scratch) Vec { return v }, konst: &v}
}

// folded is z as a constant when its operands ops are constants (a date
// plus an interval, as TPC-H writes its ranges), evaluated once here, so
// that a comparison with it is one with a constant (narrowComparison).
// What fails, such as an overflow, is left to fail where it is evaluated.
func folded(z *compiled, ops ...*compiled) (out *compiled) {
	for _, o := range ops {
		if o.konst == nil {
			return z
		}
	}
	defer func() {
		if recover() != nil {
			out = z
		}
	}()
	v := z.eval(array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1), nil) // one row, no columns
	if !v.Const {
		return z
	}
	v.K = z.k
	c := constant(v)
	c.dec = z.dec
	return c
}

// narrowComparison compares a column of 32-bit integers (narrow) with
// another or with a constant in their range as they are, or is nil: a
// load widens every value to 64 bits first, which over TPC-H Q12's
// three date tests of every line item cost more than the tests.
func narrowComparison(op string, x, y *compiled) *compiled {
	if x.k != y.k || x.k != KindInt && x.k != KindDate {
		return nil
	}
	if x.narrow == nil {
		x, y, op = y, x, flip(op)
	}
	switch {
	case x.narrow == nil:
		return nil
	case y.narrow != nil:
		return &compiled{k: KindBool, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
			n := int(r.NumRows())
			xs, xv := x.narrow(r, s)
			ys, yv := y.narrow(r, s)
			out := s.bools(n)
			compareSlices(op, xs[:n], ys[:n], out)
			return Vec{K: KindBool, B: out, Valid: bothValid(s, Vec{Valid: xv}, Vec{Valid: yv}, n)}
		}}
	case y.konst != nil && y.konst.IsValid(0) && y.konst.I[0] == int64(int32(y.konst.I[0])):
		c := int32(y.konst.I[0])
		return &compiled{k: KindBool, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
			n := int(r.NumRows())
			xs, xv := x.narrow(r, s)
			out := s.bools(n)
			compareConst(op, xs[:n], c, out)
			return Vec{K: KindBool, B: out, Valid: xv}
		}}
	}
	return nil
}

// literalVec is the value of a literal.
func (c *compiler) literalVec(n *literal) (Vec, error) {
	t := n.tok
	switch {
	case n.kind == "date":
		d, ok := parseDate(t.text)
		if !ok {
			return Vec{}, c.errAt(n, "'%s' is not a date (want 'YYYY-MM-DD')", t.text)
		}
		return Vec{K: KindDate, I: []int64{d}}, nil
	case n.kind == "timestamp":
		ts, ok := parseTimestamp(t.text)
		if !ok {
			return Vec{}, c.errAt(n, "'%s' is not a timestamp (want 'YYYY-MM-DD[ HH:MM:SS[.fff][Z07:00]]')", t.text)
		}
		return Vec{K: KindTime, I: []int64{ts}}, nil
	case n.kind == "interval":
		d, err := strconv.ParseInt(t.text, 10, 32)
		if err != nil {
			return Vec{}, c.errAt(n, "bad interval '%s'", t.text)
		}
		return Vec{K: KindInterval, I: []int64{d}}, nil
	case t.kind == tInt:
		x, err := strconv.ParseInt(strings.ReplaceAll(t.text, "_", ""), 10, 64)
		if err != nil {
			// Beyond int64: a float, as SQL engines read it.
			f, ferr := strconv.ParseFloat(strings.ReplaceAll(t.text, "_", ""), 64)
			if ferr != nil {
				return Vec{}, c.errAt(n, "number %s out of range", t.text)
			}
			return Vec{K: KindFloat, F: []float64{f}}, nil
		}
		// DuckDB types an integer literal INTEGER when it fits one.
		d := Dec{P: 19}
		if x == int64(int32(x)) {
			d.P = 10
		}
		return Vec{K: KindInt, I: []int64{x}, Dec: d}, nil
	case t.kind == tFloat:
		// With a point and no exponent: a decimal of its digits, as DuckDB
		// reads it (0.05 is DECIMAL(3,2)).
		if x, d, ok := decLiteral(t.text); ok {
			return Vec{K: KindDecimal, D: []decimal128.Num{x}, Dec: d}, nil
		}
		x, err := strconv.ParseFloat(strings.ReplaceAll(t.text, "_", ""), 64)
		if err != nil {
			return Vec{}, c.errAt(n, "number %s out of range", t.text)
		}
		return Vec{K: KindFloat, F: []float64{x}}, nil
	case t.kind == tString:
		s := t.text
		return Vec{K: KindString, S: func(int) string { return s }}, nil
	}
	return Vec{K: KindBool, B: []bool{t.text == "true"}}, nil // true, false
}

func (c *compiler) literal(n *literal) (*compiled, error) {
	if n.kind == "interval" && n.unit != "day" {
		m, err := strconv.ParseInt(n.tok.text, 10, 32)
		if err != nil {
			return nil, c.errAt(n, "bad interval '%s'", n.tok.text)
		}
		if n.unit == "year" {
			m *= 12
		}
		x := &compiled{k: KindInterval}
		if c.months == nil {
			c.months = map[*compiled]int64{}
		}
		c.months[x] = m
		return x, nil
	}
	v, err := c.literalVec(n)
	if err != nil {
		return nil, err
	}
	return constant(v), nil
}

// parseDate reads 'YYYY-MM-DD' as days since 1970-01-01.
func parseDate(s string) (int64, bool) {
	d, err := time.Parse("2006-01-02", s)
	if err != nil {
		return 0, false
	}
	return floorDiv(d.Unix(), 86400), true
}

// timestampLayouts are what a timestamp may be written as; without a
// zone the time is UTC.
var timestampLayouts = []string{
	"2006-01-02",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
}

// parseTimestamp reads a timestamp as nanoseconds since 1970-01-01 UTC.
func parseTimestamp(s string) (int64, bool) {
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if y := t.Year(); y < 1678 || y > 2261 { // beyond int64 nanoseconds
				return 0, false
			}
			return t.UnixNano(), true
		}
	}
	return 0, false
}

func (c *compiler) binary(n *binary) (*compiled, error) {
	switch n.op {
	case "||":
		x, y, err := c.both(n)
		if err != nil {
			return nil, err
		}
		if x.k == KindBool && y.k == KindBool {
			return andOr(false, x, y), nil
		}
		if x.k == KindBool || y.k == KindBool {
			return nil, c.errAt(n, "|| of %s and %s: || is or between booleans and concatenation otherwise, and binds loosest (write (a || b) = c)", x.k.A(), y.k.A())
		}
		return concatOp(x, y), nil
	case "and", "or":
		x, y, err := c.both(n)
		if err != nil {
			return nil, err
		}
		if x.k != KindBool || y.k != KindBool {
			return nil, c.errAt(n, "%s needs booleans on both sides, got %s and %s", n.op, x.k, y.k)
		}
		return andOr(n.op == "and", x, y), nil
	case "=", "!=", "<", "<=", ">", ">=":
		return c.comparison(n)
	}
	return c.arithmetic(n)
}

// both compiles the two sides of n.
func (c *compiler) both(n *binary) (x, y *compiled, err error) {
	if x, err = c.compile(n.x); err != nil {
		return nil, nil, err
	}
	if y, err = c.compile(n.y); err != nil {
		return nil, nil, err
	}
	return x, y, nil
}

// operands compiles both sides of a comparison. As in SQL, a quoted
// string compared with a date or timestamp is read as one.
func (c *compiler) operands(n *binary) (x, y *compiled, err error) {
	if x, y, err = c.both(n); err != nil {
		return nil, nil, err
	}
	if x.k == KindDate || x.k == KindTime {
		if y, err = c.coerce(n.y, y, x.k); err != nil {
			return nil, nil, err
		}
	}
	if y.k == KindDate || y.k == KindTime {
		if x, err = c.coerce(n.x, x, y.k); err != nil {
			return nil, nil, err
		}
	}
	return x, y, nil
}

// coerce reads a string literal as a date or timestamp; anything else is
// left as it is.
func (c *compiler) coerce(n Node, x *compiled, to Kind) (*compiled, error) {
	lit, ok := n.(*literal)
	if !ok || x.k != KindString || lit.kind != "" {
		return x, nil
	}
	s := lit.tok.text
	if to == KindDate {
		if d, ok := parseDate(s); ok {
			return constant(Vec{K: KindDate, I: []int64{d}}), nil
		}
		if ts, ok := parseTimestamp(s); ok {
			return constant(Vec{K: KindTime, I: []int64{ts}}), nil
		}
		return nil, c.errAt(n, "'%s' is not a date (want 'YYYY-MM-DD')", s)
	}
	ts, ok := parseTimestamp(s)
	if !ok {
		return nil, c.errAt(n, "'%s' is not a timestamp (want 'YYYY-MM-DD[ HH:MM:SS[.fff][Z07:00]]')", s)
	}
	return constant(Vec{K: KindTime, I: []int64{ts}}), nil
}

func (c *compiler) comparison(n *binary) (*compiled, error) {
	x, y, err := c.operands(n)
	if err != nil {
		return nil, err
	}
	op := n.op
	if z := narrowComparison(op, x, y); z != nil {
		return z, nil
	}
	mk := func(f func(s *Scratch, a, b Vec, n int) Vec) (*compiled, error) {
		return &compiled{k: KindBool, eval: func(r arrow.RecordBatch, s *Scratch) Vec { return f(s, x.eval(r, s), y.eval(r, s), int(r.NumRows())) }}, nil
	}
	switch {
	case x.k == KindInt && y.k == KindInt, x.k == KindDate && y.k == KindDate, x.k == KindTime && y.k == KindTime,
		x.k == KindInterval && y.k == KindInterval:
		return mk(func(s *Scratch, a, b Vec, n int) Vec { return compareVec(s, op, a.I, b.I, a, b, n) })
	case x.k == KindDecimal && y.k != KindFloat && y.k.Numeric(), y.k == KindDecimal && x.k != KindFloat && x.k.Numeric():
		return mk(func(s *Scratch, a, b Vec, n int) Vec { return compareDecs(s, op, a, b, n) })
	case x.k.Numeric() && y.k.Numeric():
		return mk(func(s *Scratch, a, b Vec, n int) Vec {
			return compareVec(s, op, asFloat(s, a).F, asFloat(s, b).F, a, b, n)
		})
	case x.k == KindDate && y.k == KindTime || x.k == KindTime && y.k == KindDate:
		return mk(func(s *Scratch, a, b Vec, n int) Vec {
			return compareVec(s, op, asTime(s, a).I, asTime(s, b).I, a, b, n)
		})
	case x.k == KindString && y.k == KindString:
		return selective(func(r arrow.RecordBatch, s *Scratch, sel []bool) Vec {
			return compareStrings(s, op, x.eval(r, s), y.eval(r, s), int(r.NumRows()), sel)
		}), nil
	case x.k == KindBool && y.k == KindBool:
		return mk(func(s *Scratch, a, b Vec, n int) Vec { return compareBools(s, op, a, b, n) })
	}
	return nil, c.errAt(n, "cannot compare %s with %s", x.k.A(), y.k.A())
}

func (c *compiler) arithmetic(n *binary) (*compiled, error) {
	x, err := c.compileAny(n.x)
	if err != nil {
		return nil, err
	}
	y, err := c.compileAny(n.y)
	if err != nil {
		return nil, err
	}
	op := n.op
	_, xm := c.months[x]
	_, ym := c.months[y]
	if xm || ym {
		return c.addMonths(n, x, y)
	}
	mk := func(k Kind, f func(s *Scratch, a, b Vec, n int) Vec) (*compiled, error) {
		return folded(&compiled{k: k, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
			v := f(s, x.eval(r, s), y.eval(r, s), int(r.NumRows()))
			v.K = k
			return v
		}}, x, y), nil
	}
	addSub := op == "+" || op == "-"
	if dx, dy := x.k == KindDecimal, y.k == KindDecimal; (dx || dy) && op != "/" &&
		(dx || x.k == KindInt) && (dy || y.k == KindInt) {
		if d, err := c.decArith(n, x, y); d != nil || err != nil {
			return d, err
		}
	}
	switch {
	case x.k == KindInt && y.k == KindInt && op != "/":
		return mk(KindInt, func(s *Scratch, a, b Vec, n int) Vec { return arithInt(s, op, a, b, n) })
	case x.k.Numeric() && y.k.Numeric():
		return mk(KindFloat, func(s *Scratch, a, b Vec, n int) Vec { return arithFloat(s, op, asFloat(s, a), asFloat(s, b), n) })
	case x.k == KindDate && (y.k == KindInt || y.k == KindInterval) && addSub,
		(x.k == KindInt || x.k == KindInterval) && y.k == KindDate && op == "+":
		return mk(KindDate, func(s *Scratch, a, b Vec, n int) Vec { return arithInt(s, op, a, b, n) })
	case x.k == KindTime && y.k == KindInterval && addSub:
		return mk(KindTime, func(s *Scratch, a, b Vec, n int) Vec { return arithInt(s, op, a, dayNanos(s, b), n) })
	case x.k == KindInterval && y.k == KindTime && op == "+":
		return mk(KindTime, func(s *Scratch, a, b Vec, n int) Vec { return arithInt(s, op, dayNanos(s, a), b, n) })
	case x.k == KindInterval && y.k == KindInterval && addSub:
		return mk(KindInterval, func(s *Scratch, a, b Vec, n int) Vec { return arithInt(s, op, a, b, n) })
	case x.k == KindDate && y.k == KindDate && op == "-":
		return mk(KindInt, func(s *Scratch, a, b Vec, n int) Vec { return arithInt(s, op, a, b, n) })
	}
	return nil, c.errAt(n, "cannot apply %s to %s and %s", op, x.k.A(), y.k.A())
}

func dayNanos(s *Scratch, v Vec) Vec {
	v.I = scale(s, v.I, 86_400e9)
	return v
}

func (c *compiler) call(n *Call) (*compiled, error) {
	args := make([]*compiled, len(n.Args))
	for i, a := range n.Args {
		x, err := c.compile(a)
		if err != nil {
			return nil, err
		}
		args[i] = x
	}
	want := func(kinds ...Kind) error {
		if len(args) != len(kinds) {
			return c.errAt(n, "%s takes %d argument(s), got %d", n.Fn, len(kinds), len(args))
		}
		for i, k := range kinds {
			if args[i].k != k && !(k == KindFloat && args[i].k.Numeric()) {
				return c.errAt(n.Args[i], "argument %d of %s must be %s, got %s", i+1, n.Fn, k.A(), args[i].k.A())
			}
		}
		return nil
	}
	if n.Fn == "regexp_matches" {
		return c.regexpMatches(n, args)
	}
	switch n.Fn {
	case "starts_with", "ends_with", "contains":
		if err := want(KindString, KindString); err != nil {
			return nil, err
		}
		f := map[string]func(s, p string) bool{"starts_with": strings.HasPrefix, "ends_with": strings.HasSuffix, "contains": strings.Contains}[n.Fn]
		return selective(func(r arrow.RecordBatch, s *Scratch, sel []bool) Vec {
			return stringPredicate(s, f, args[0].eval(r, s), args[1].eval(r, s), int(r.NumRows()), sel)
		}), nil
	case "abs":
		if err := want(KindFloat); err != nil {
			return nil, err
		}
		x := args[0]
		return &compiled{k: x.k, dec: x.dec, eval: func(r arrow.RecordBatch, s *Scratch) Vec { return absVec(s, x.eval(r, s)) }}, nil
	}
	return c.function(n, args)
}
