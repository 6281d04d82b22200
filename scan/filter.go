package scan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Op is a comparison operator of a filter term.
type Op int

// The comparisons a filter term can make.
const (
	OpEq Op = iota // =  (also ==)
	OpNe           // != (also <>)
	OpLt           // <
	OpLe           // <=
	OpGt           // >
	OpGe           // >=
)

var opText = [...]string{OpEq: "=", OpNe: "!=", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">="}

func (o Op) String() string {
	if o < 0 || int(o) >= len(opText) {
		return "?"
	}
	return opText[o]
}

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

// LitKind is the kind of a literal as written; its meaning for a column
// (a quoted '1998-09-02' against a date column is a date) is decided when
// the filter is bound to a dataset's schema.
type LitKind int

// Literal kinds.
const (
	LitNumber LitKind = iota // 42, -1.5, 1e6
	LitString                // 'text' (a quote inside is written '')
	LitBool                  // true, false
	LitDate                  // date 'YYYY-MM-DD'
)

// Literal is the constant side of a term.
type Literal struct {
	Kind  LitKind
	Text  string  // as written (a string's or date's value, unquoted)
	IsInt bool    // a number written without fraction or exponent that fits int64
	Int   int64   // when IsInt
	Float float64 // every number
	Bool  bool
}

// Term is one comparison, always normalised to column op literal.
type Term struct {
	Column string
	Op     Op
	Value  Literal
	// ColPos and ValPos are the 0-based byte offsets of the column and
	// literal in the filter text, for errors that point at them.
	ColPos, ValPos int
}

func (t Term) String() string {
	var v string
	switch t.Value.Kind {
	case LitString:
		v = "'" + strings.ReplaceAll(t.Value.Text, "'", "''") + "'"
	case LitDate:
		v = "date '" + t.Value.Text + "'"
	default:
		v = t.Value.Text
	}
	return quoteIdent(t.Column) + " " + t.Op.String() + " " + v
}

// Filter is a conjunction of comparisons: a row is kept when every term
// holds. A comparison with a null value does not hold.
type Filter struct {
	Terms []Term
	src   string
}

func (f *Filter) String() string {
	parts := make([]string, len(f.Terms))
	for i, t := range f.Terms {
		parts[i] = t.String()
	}
	return strings.Join(parts, " and ")
}

// FilterError is a filter that could not be parsed or does not fit the
// dataset, pointing at where in the text the problem is.
type FilterError struct {
	Src string
	Pos int // 0-based byte offset; len(Src) means the end
	Msg string
}

func (e *FilterError) Error() string {
	return fmt.Sprintf("filter %q: at %s: %s", e.Src, e.where(), e.Msg)
}

func (e *FilterError) where() string {
	if e.Pos >= len(e.Src) {
		return "the end"
	}
	return fmt.Sprintf("position %d", utf8.RuneCountInString(e.Src[:e.Pos])+1)
}

// ParseFilter parses comparisons joined by "and":
//
//	l_shipdate >= '1994-01-01' and l_discount < 0.05 and l_shipmode = 'AIR'
//
// A term compares a column with a literal, either way round, by =, ==,
// !=, <>, <, <=, > or >=. Literals are numbers (42, -1.5, 1e6); strings in
// single quotes (a quote inside written twice), which against a date or
// timestamp column are read as 'YYYY-MM-DD' (or 'YYYY-MM-DD HH:MM:SS[.fff]');
// date 'YYYY-MM-DD'; and true or false. Column names are identifiers, or in double quotes or
// backquotes when they are not ("my col"). Keywords are case-insensitive.
// There is no or, not or parenthesis: a conjunction is what row-group
// pruning can use, and what the scan needs.
func ParseFilter(src string) (*Filter, error) {
	p := &parser{src: src}
	p.next()
	f := &Filter{src: src}
	if p.tok.kind == tEOF {
		return nil, p.errAt(0, "empty filter")
	}
	for {
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		f.Terms = append(f.Terms, t)
		switch {
		case p.tok.kind == tEOF:
			return f, nil
		case p.tok.kind == tIdent && !p.tok.quoted && strings.EqualFold(p.tok.text, "and"):
			p.next()
			if p.tok.kind == tEOF {
				return nil, p.errAt(len(src), `expected a comparison after "and"`)
			}
		case p.tok.kind == tIdent && !p.tok.quoted && strings.EqualFold(p.tok.text, "or"):
			return nil, p.errAt(p.tok.pos, `"or" is not supported: only comparisons joined by "and"`)
		default:
			return nil, p.errAt(p.tok.pos, fmt.Sprintf(`expected "and" or the end, got %s`, p.tok.describe()))
		}
	}
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tNumber
	tString
	tOp
	tBad
)

type token struct {
	kind   tokKind
	text   string // identifier, unquoted string, number or operator text
	pos    int
	quoted bool // a quoted identifier: never a keyword
	op     Op
	err    string // for tBad
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "the end"
	case tString:
		return fmt.Sprintf("'%s'", t.text)
	case tIdent:
		if t.quoted {
			return strconv.Quote(t.text)
		}
	}
	return strconv.Quote(t.text)
}

type parser struct {
	src string
	off int
	tok token
}

func (p *parser) errAt(pos int, msg string) error {
	return &FilterError{Src: p.src, Pos: pos, Msg: msg}
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// next scans one token into p.tok.
func (p *parser) next() {
	s := p.src
	for p.off < len(s) && (s[p.off] == ' ' || s[p.off] == '\t' || s[p.off] == '\n' || s[p.off] == '\r') {
		p.off++
	}
	start := p.off
	if p.off >= len(s) {
		p.tok = token{kind: tEOF, pos: len(s)}
		return
	}
	c := s[p.off]
	switch {
	case isIdentStart(c):
		for p.off < len(s) && isIdentPart(s[p.off]) {
			p.off++
		}
		p.tok = token{kind: tIdent, text: s[start:p.off], pos: start}
	case c == '"' || c == '`' || c == '\'':
		text, ok := p.quoted(c)
		switch {
		case !ok:
			p.tok = token{kind: tBad, pos: start, err: fmt.Sprintf("unterminated %c quote", c)}
		case c == '\'':
			p.tok = token{kind: tString, text: text, pos: start}
		case text == "":
			p.tok = token{kind: tBad, pos: start, err: "empty column name"}
		default:
			p.tok = token{kind: tIdent, text: text, pos: start, quoted: true}
		}
	case c >= '0' && c <= '9' || c == '.' || c == '-' || c == '+':
		p.off++
		for p.off < len(s) {
			d := s[p.off]
			if d >= '0' && d <= '9' || d == '.' || d == 'e' || d == 'E' || d == '_' ||
				(d == '-' || d == '+') && (s[p.off-1] == 'e' || s[p.off-1] == 'E') || isIdentStart(d) {
				p.off++
				continue
			}
			break
		}
		p.tok = token{kind: tNumber, text: s[start:p.off], pos: start}
	default:
		ops := []struct {
			text string
			op   Op
		}{{"<=", OpLe}, {">=", OpGe}, {"!=", OpNe}, {"<>", OpNe}, {"==", OpEq}, {"=", OpEq}, {"<", OpLt}, {">", OpGt}}
		for _, o := range ops {
			if strings.HasPrefix(s[p.off:], o.text) {
				p.off += len(o.text)
				p.tok = token{kind: tOp, text: o.text, pos: start, op: o.op}
				return
			}
		}
		r, size := utf8.DecodeRuneInString(s[p.off:])
		p.off += size
		p.tok = token{kind: tBad, pos: start, err: fmt.Sprintf("unexpected character %q", r)}
	}
}

// quoted reads a quoted run; a doubled quote character stands for itself.
func (p *parser) quoted(q byte) (string, bool) {
	var b strings.Builder
	i := p.off + 1
	for i < len(p.src) {
		if p.src[i] == q {
			if i+1 < len(p.src) && p.src[i+1] == q {
				b.WriteByte(q)
				i += 2
				continue
			}
			p.off = i + 1
			return b.String(), true
		}
		b.WriteByte(p.src[i])
		i++
	}
	p.off = len(p.src)
	return "", false
}

// operand is one side of a comparison.
type operand struct {
	isColumn bool
	column   string
	lit      Literal
	pos      int
}

func (p *parser) operand(after string) (operand, error) {
	t := p.tok
	what := "a column or a value"
	if after != "" {
		what = fmt.Sprintf("a column or a value after %q", after)
	}
	switch t.kind {
	case tEOF:
		return operand{}, p.errAt(t.pos, "expected "+what)
	case tBad:
		return operand{}, p.errAt(t.pos, t.err)
	case tOp:
		return operand{}, p.errAt(t.pos, fmt.Sprintf("expected %s, got %q", what, t.text))
	case tString:
		p.next()
		return operand{lit: Literal{Kind: LitString, Text: t.text}, pos: t.pos}, nil
	case tNumber:
		p.next()
		lit, err := parseNumber(t.text)
		if err != nil {
			return operand{}, p.errAt(t.pos, err.Error())
		}
		return operand{lit: lit, pos: t.pos}, nil
	}
	// An identifier: a keyword unless quoted.
	p.next()
	if !t.quoted {
		switch strings.ToLower(t.text) {
		case "true", "false":
			return operand{lit: Literal{Kind: LitBool, Text: strings.ToLower(t.text), Bool: strings.EqualFold(t.text, "true")}, pos: t.pos}, nil
		case "date":
			if p.tok.kind != tString {
				return operand{}, p.errAt(p.tok.pos, "expected a quoted 'YYYY-MM-DD' after date")
			}
			s := p.tok
			if _, err := parseDate(s.text); err != nil {
				return operand{}, p.errAt(s.pos, err.Error())
			}
			p.next()
			return operand{lit: Literal{Kind: LitDate, Text: s.text}, pos: t.pos}, nil
		case "and", "or", "not", "null", "is", "in":
			return operand{}, p.errAt(t.pos, fmt.Sprintf("expected %s, got the keyword %q (quote a column with that name: \"%s\")", what, t.text, t.text))
		}
	}
	return operand{isColumn: true, column: t.text, pos: t.pos}, nil
}

func (p *parser) term() (Term, error) {
	left, err := p.operand("")
	if err != nil {
		return Term{}, err
	}
	op := p.tok
	if op.kind != tOp {
		if op.kind == tBad {
			return Term{}, p.errAt(op.pos, op.err)
		}
		return Term{}, p.errAt(op.pos, fmt.Sprintf("expected a comparison (=, !=, <, <=, >, >=), got %s", op.describe()))
	}
	p.next()
	right, err := p.operand(op.text)
	if err != nil {
		return Term{}, err
	}
	switch {
	case left.isColumn && !right.isColumn:
		return Term{Column: left.column, Op: op.op, Value: right.lit, ColPos: left.pos, ValPos: right.pos}, nil
	case !left.isColumn && right.isColumn:
		return Term{Column: right.column, Op: op.op.flip(), Value: left.lit, ColPos: right.pos, ValPos: left.pos}, nil
	case left.isColumn:
		return Term{}, p.errAt(right.pos, fmt.Sprintf("compare a column with a value, not with another column (%q)", right.column))
	}
	return Term{}, p.errAt(left.pos, "a comparison needs a column on one side")
}

func parseNumber(text string) (Literal, error) {
	bad := fmt.Errorf("%q is not a number", text)
	if strings.ContainsAny(text, "_") || strings.ContainsFunc(text, func(r rune) bool {
		return r != 'e' && r != 'E' && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= 0x80)
	}) {
		return Literal{}, bad
	}
	lit := Literal{Kind: LitNumber, Text: text}
	if i, err := strconv.ParseInt(text, 10, 64); err == nil {
		lit.IsInt, lit.Int, lit.Float = true, i, float64(i)
		return lit, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		var ne *strconv.NumError
		if err != nil && !(asNumError(err, &ne) && ne.Err == strconv.ErrRange) {
			return Literal{}, bad
		}
		return Literal{}, fmt.Errorf("%q is out of range", text)
	}
	lit.Float = f
	return lit, nil
}

func asNumError(err error, target **strconv.NumError) bool {
	ne, ok := err.(*strconv.NumError)
	if ok {
		*target = ne
	}
	return ok
}

func quoteIdent(name string) string {
	if name == "" {
		return `""`
	}
	plain := isIdentStart(name[0])
	for i := 0; plain && i < len(name); i++ {
		plain = isIdentPart(name[i])
	}
	switch strings.ToLower(name) {
	case "and", "or", "not", "null", "is", "in", "true", "false", "date":
		plain = false
	}
	if plain {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
