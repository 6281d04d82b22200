package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Op is how a Term relates a column to a value.
type Op int

// The relations a Term can state.
const (
	OpEq Op = iota
	OpNe
	OpLt
	OpLe
	OpGt
	OpGe
	OpIsNull  // the column is null (Value unused)
	OpNotNull // the column is not null (Value unused)
)

var opNames = [...]string{"=", "!=", "<", "<=", ">", ">=", "is null", "is not null"}

func (o Op) String() string { return opNames[o] }

var cmpOp = map[string]Op{"=": OpEq, "!=": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe}

// flip is the operator with its operands swapped: 5 < x is x > 5.
func (o Op) flip() Op {
	switch o {
	case OpLt:
		return OpGt
	case OpLe:
		return OpGe
	case OpGt:
		return OpLt
	case OpGe:
		return OpLe
	}
	return o
}

// Term is "Column Op Value": Value is a constant of the column's kind
// (both numeric, for numbers), compared as the evaluator compares them
// (a string literal against a date column already read as a date). A
// comparison holds for no null value.
type Term struct {
	Column string
	Op     Op
	Value  Vec
}

// Conjunct is terms at least one of which holds on every row the
// filter keeps: one term, or an "or" (or an "in" list) of them.
type Conjunct []Term

// Conjuncts are what the filter says about single columns, for a reader
// that skips data by statistics: every row the filter keeps satisfies
// every conjunct. They come from its top-level "and" terms (between
// giving two); a term they cannot describe (an expression of a column,
// a function, a not) gives none, so the filter may keep fewer rows than
// the conjuncts allow, never more.
func (e *Expr) Conjuncts() []Conjunct {
	c := &compiler{input: e.input, schema: e.schema, cols: map[int]bool{}}
	return c.conjuncts(e.node)
}

func (c *compiler) conjuncts(n Node) []Conjunct {
	switch n := n.(type) {
	case *binary:
		switch n.op {
		case "and":
			return append(c.conjuncts(n.x), c.conjuncts(n.y)...)
		case "or", "||": // || here is or: a filter's terms are booleans
			// (A1 and A2) or B implies A1 or B: one conjunct of each side.
			x, y := c.conjuncts(n.x), c.conjuncts(n.y)
			if len(x) == 0 || len(y) == 0 {
				return nil
			}
			return []Conjunct{append(append(Conjunct(nil), x[0]...), y[0]...)}
		}
		if t, ok := c.term(n.op, n.x, n.y); ok {
			return []Conjunct{{t}}
		}
	case *between:
		if n.not {
			return nil
		}
		var out []Conjunct
		if t, ok := c.term(">=", n.x, n.lo); ok {
			out = append(out, Conjunct{t})
		}
		if t, ok := c.term("<=", n.x, n.hi); ok {
			out = append(out, Conjunct{t})
		}
		return out
	case *inList:
		if n.not {
			return nil
		}
		var or Conjunct
		for _, item := range n.list {
			t, ok := c.term("=", n.x, item)
			if !ok {
				return nil
			}
			or = append(or, t)
		}
		return []Conjunct{or}
	case *isNull:
		col, ok := n.x.(*Column)
		if !ok || len(c.schema.FieldIndices(col.Name)) == 0 {
			return nil
		}
		op := OpIsNull
		if n.not {
			op = OpNotNull
		}
		return []Conjunct{{{Column: col.Name, Op: op}}}
	}
	return nil
}

// constValue evaluates a constant; false when it overflows (the rows'
// evaluation reports that).
func constValue(c *compiled, one arrow.RecordBatch) (v Vec, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, isOverflow := r.(*OverflowError); !isOverflow {
				panic(r)
			}
			ok = false
		}
	}()
	return c.eval(one, nil), true
}

// term describes "x op y" when one side is a column and the other a
// constant.
func (c *compiler) term(op string, x, y Node) (Term, bool) {
	o, ok := cmpOp[op]
	if !ok {
		return Term{}, false
	}
	col, isCol := x.(*Column)
	val := y
	if !isCol {
		if col, isCol = y.(*Column); !isCol {
			return Term{}, false
		}
		val, o = x, o.flip()
	}
	cx, err := c.compile(col)
	if err != nil || cx.k == KindDecimal {
		// Nothing reads a decimal column's statistics.
		return Term{}, false
	}
	vc := &compiler{input: c.input, schema: c.schema, cols: map[int]bool{}}
	cv, err := vc.compile(val)
	if err != nil || len(vc.cols) != 0 {
		return Term{}, false // not a constant
	}
	if cx.k == KindDate || cx.k == KindTime {
		if cv, err = c.coerce(val, cv, cx.k); err != nil {
			return Term{}, false
		}
	}
	one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
	defer one.Release()
	v, ok := constValue(cv, one)
	if !ok || !v.Const || !v.IsValid(0) {
		return Term{}, false
	}
	switch {
	case cx.k == cv.k && cx.k != KindInterval, cx.k.Numeric() && cv.k.Numeric():
	case cx.k == KindDate && cv.k == KindTime:
		// A date against a timestamp compares as timestamps: the column
		// as midnight. Only an instant at midnight is a date.
		if v.I[0]%86_400e9 != 0 {
			return Term{}, false
		}
		v = Vec{K: KindDate, Const: true, I: []int64{floorDiv(v.I[0], 86_400e9)}}
	case cx.k == KindTime && cv.k == KindDate:
		v = Vec{K: KindTime, Const: true, I: []int64{v.I[0] * 86_400e9}}
	default:
		return Term{}, false
	}
	if v.K == KindString {
		s := v.S(0)
		v.S = func(int) string { return s }
	}
	if v.K == KindDecimal {
		d, s := v.D[0], v.Dec.S
		if cx.k == KindFloat {
			// Rows compare with the decimal as a float: so do statistics.
			v = Vec{K: KindFloat, Const: true, F: []float64{DecFloat(d, s)}}
		} else if i, ok := small(d); ok && s < 19 && i%int64(pow10Num[s].LowBits()) == 0 {
			// Rows of an integer column compare exactly: so can statistics,
			// when the decimal is a whole number.
			v = Vec{K: KindInt, Const: true, I: []int64{i / int64(pow10Num[s].LowBits())}}
		} else {
			return Term{}, false
		}
	}
	return Term{Column: col.Name, Op: o, Value: v}, true
}
