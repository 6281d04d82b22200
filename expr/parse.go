package expr

import (
	"fmt"
	"strconv"
	"strings"
)

// The grammar:
//
//	expr    = or
//	or      = and { ("or" | "||") and }      (|| of strings is concatenation)
//	and     = not { ("and" | "&&") not }
//	not     = ("not" | "!") not | cmp
//	cmp     = add [ ("=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">=") add
//	              | "is" ["not"] "null"
//	              | ["not"] "in" "(" expr { "," expr } ")"
//	              | ["not"] "between" add "and" add
//	              | ["not"] "like" 'pattern' ]
//	add     = mul { ("+" | "-") mul }
//	mul     = unary { ("*" | "/" | "%") unary }
//	unary   = "-" unary | primary
//	primary = number | 'string' | "true" | "false"
//	        | "date" 'YYYY-MM-DD' | "timestamp" 'YYYY-MM-DD[ HH:MM:SS[.fff]]'
//	        | "interval" 'N' ("day" | "month" | "year")   (or their plurals)
//	        | "case" [ expr ] "when" expr "then" value { "when" expr "then" value } [ "else" value ] "end"
//	        | "cast" "(" expr "as" type ")" | "extract" "(" name "from" expr ")"
//	        | name [ "(" [ expr { "," expr } ] ")" ] | "(" expr ")"
//
// A value of a case is an expr or null. Names are columns, or functions when called; a name that is not a
// plain word, or is a keyword, is written in double quotes or backquotes
// ("trip distance"). Strings are in single quotes, a quote doubled
// inside. Keywords are case-insensitive.

// Node is a parsed expression.
type Node interface {
	position() int
	write(b *strings.Builder)
	operands() []Node
}

// Column is a column named in an expression.
type Column struct {
	Name string
	Pos  int // 1-based character position
}

// Call is a function applied to arguments: a function of the language
// (abs, starts_with, ...) or, in ParseList, an aggregate.
type Call struct {
	Fn   string // lower case
	Args []Node
	Pos  int
}

type (
	literal struct {
		tok  token  // tInt, tFloat, tString, or tName for true/false
		kind string // "", "date", "timestamp", "interval" or "null" (a value of case)
		unit string // an interval's: day, month or year
		pos  int
	}
	unary struct {
		op  string // "-" or "not"
		x   Node
		pos int
	}
	binary struct {
		op   string // normalized: or || and = != < <= > >= + - * / %
		x, y Node
		pos  int
	}
	isNull struct {
		x   Node
		not bool
		pos int
	}
	inList struct {
		x    Node
		list []Node
		not  bool
		pos  int
	}
	between struct {
		x, lo, hi Node
		not       bool
		pos       int
	}
	like struct {
		x       Node
		pattern string
		not     bool
		pos     int
	}
	// caseWhen is CASE; with an operand x, each when is compared to it.
	caseWhen struct {
		x           Node // nil for CASE WHEN cond ...
		whens, then []Node
		els         Node // nil: null
		pos         int
	}
	cast struct {
		x  Node
		to string // a type name as written, lower case
		// args are a decimal's precision and scale, as written
		// (decimal(15,2)); none when not written.
		args []int32
		pos  int
	}
)

func (n *Column) position() int   { return n.Pos }
func (n *Call) position() int     { return n.Pos }
func (n *literal) position() int  { return n.pos }
func (n *unary) position() int    { return n.pos }
func (n *binary) position() int   { return n.pos }
func (n *isNull) position() int   { return n.pos }
func (n *inList) position() int   { return n.pos }
func (n *between) position() int  { return n.pos }
func (n *like) position() int     { return n.pos }
func (n *caseWhen) position() int { return n.pos }
func (n *cast) position() int     { return n.pos }

func (n *Column) operands() []Node  { return nil }
func (n *Call) operands() []Node    { return n.Args }
func (n *literal) operands() []Node { return nil }
func (n *unary) operands() []Node   { return []Node{n.x} }
func (n *binary) operands() []Node  { return []Node{n.x, n.y} }
func (n *isNull) operands() []Node  { return []Node{n.x} }
func (n *inList) operands() []Node  { return append([]Node{n.x}, n.list...) }
func (n *between) operands() []Node { return []Node{n.x, n.lo, n.hi} }
func (n *like) operands() []Node    { return []Node{n.x} }
func (n *cast) operands() []Node    { return []Node{n.x} }
func (n *caseWhen) operands() []Node {
	var out []Node
	if n.x != nil {
		out = append(out, n.x)
	}
	for i := range n.whens {
		out = append(out, n.whens[i], n.then[i])
	}
	if n.els != nil {
		out = append(out, n.els)
	}
	return out
}

// ColumnNames returns the names of the columns n reads, each once, in the
// order they first appear: what a planner must read for it.
func ColumnNames(n Node) []string {
	var names []string
	seen := map[string]bool{}
	var walk func(Node)
	walk = func(n Node) {
		if c, ok := n.(*Column); ok && !seen[c.Name] {
			seen[c.Name] = true
			names = append(names, c.Name)
		}
		for _, o := range n.operands() {
			walk(o)
		}
	}
	walk(n)
	return names
}

// String prints n in a form that parses back to the same expression.
func String(n Node) string {
	var b strings.Builder
	n.write(&b)
	return b.String()
}

var keywords = map[string]bool{"and": true, "or": true, "not": true, "is": true, "null": true, "in": true,
	"between": true, "like": true, "true": true, "false": true, "date": true, "timestamp": true, "interval": true, "as": true,
	"case": true, "when": true, "then": true, "else": true, "end": true, "cast": true, "extract": true, "from": true}

// QuoteName writes a column name so that it lexes back as that name.
func QuoteName(name string) string {
	plain := name != "" && !keywords[strings.ToLower(name)]
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && (r >= '0' && r <= '9' || r == '.')) {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (n *Column) write(b *strings.Builder) { b.WriteString(QuoteName(n.Name)) }

func (n *Call) write(b *strings.Builder) {
	b.WriteString(n.Fn)
	b.WriteByte('(')
	for i, a := range n.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		a.write(b)
	}
	b.WriteByte(')')
}

func (n *literal) write(b *strings.Builder) {
	switch {
	case n.kind == "interval":
		b.WriteString("interval " + quoteString(n.tok.text) + " " + n.unit)
	case n.kind == "null":
		b.WriteString("null")
	case n.kind != "":
		b.WriteString(n.kind + " " + quoteString(n.tok.text))
	case n.tok.kind == tString:
		b.WriteString(quoteString(n.tok.text))
	default:
		b.WriteString(n.tok.text)
	}
}

func (n *unary) write(b *strings.Builder) {
	if n.op == "-" {
		// Minus binds tightest, and binaries are parenthesized: no
		// parentheses needed (nor depth spent on them).
		b.WriteString("- ")
		n.x.write(b)
		return
	}
	b.WriteString("(" + n.op + " ")
	n.x.write(b)
	b.WriteString(")")
}

func (n *binary) write(b *strings.Builder) {
	b.WriteByte('(')
	n.x.write(b)
	b.WriteString(" " + n.op + " ")
	n.y.write(b)
	b.WriteByte(')')
}

func (n *caseWhen) write(b *strings.Builder) {
	b.WriteString("case")
	if n.x != nil {
		b.WriteByte(' ')
		n.x.write(b)
	}
	for i := range n.whens {
		b.WriteString(" when ")
		n.whens[i].write(b)
		b.WriteString(" then ")
		n.then[i].write(b)
	}
	if n.els != nil {
		b.WriteString(" else ")
		n.els.write(b)
	}
	b.WriteString(" end")
}

func (n *cast) write(b *strings.Builder) {
	b.WriteString("cast(")
	n.x.write(b)
	b.WriteString(" as " + n.to)
	if len(n.args) > 0 {
		b.WriteString("(")
		for i, a := range n.args {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(strconv.Itoa(int(a)))
		}
		b.WriteString(")")
	}
	b.WriteString(")")
}

func not(b *strings.Builder, not bool) {
	if not {
		b.WriteString(" not")
	}
}

func (n *isNull) write(b *strings.Builder) {
	b.WriteByte('(')
	n.x.write(b)
	b.WriteString(" is")
	not(b, n.not)
	b.WriteString(" null)")
}

func (n *inList) write(b *strings.Builder) {
	b.WriteByte('(')
	n.x.write(b)
	not(b, n.not)
	b.WriteString(" in (")
	for i, a := range n.list {
		if i > 0 {
			b.WriteString(", ")
		}
		a.write(b)
	}
	b.WriteString("))")
}

func (n *between) write(b *strings.Builder) {
	b.WriteByte('(')
	n.x.write(b)
	not(b, n.not)
	b.WriteString(" between ")
	n.lo.write(b)
	b.WriteString(" and ")
	n.hi.write(b)
	b.WriteByte(')')
}

func (n *like) write(b *strings.Builder) {
	b.WriteByte('(')
	n.x.write(b)
	not(b, n.not)
	b.WriteString(" like " + quoteString(n.pattern) + ")")
}

type parser struct {
	input string
	toks  []token
	i     int
	depth int
}

// maxDepth bounds nesting so a hostile expression cannot exhaust the stack.
const maxDepth = 200

// Parse parses a whole expression.
func Parse(input string) (Node, error) {
	p, err := newParser(input)
	if err != nil {
		return nil, err
	}
	if p.peek().kind == tEOF {
		return nil, p.errAt(p.peek(), "empty expression")
	}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "unexpected %s after a complete expression", t)
	}
	return n, nil
}

func newParser(input string) (*parser, error) {
	toks, err := lex(input)
	if err != nil {
		return nil, err
	}
	return &parser{input: input, toks: toks}, nil
}

// Item is one expression of a list, with the name it is given (as NAME)
// and the text it was written as.
type Item struct {
	Node Node
	As   string // empty when not named
	Text string
	Pos  int
}

// ParseList parses expressions separated by commas, each optionally
// followed by "as NAME": agg-by's "sum(x), count() as n".
func ParseList(input string) ([]Item, error) {
	p, err := newParser(input)
	if err != nil {
		return nil, err
	}
	var items []Item
	for {
		start := p.peek()
		if start.kind == tEOF {
			return nil, p.errAt(start, "expected an expression")
		}
		n, err := p.expr()
		if err != nil {
			return nil, err
		}
		end := p.peek()
		it := Item{Node: n, Pos: start.pos, Text: strings.TrimSpace(p.input[runeOffset(p.input, start.pos):runeOffset(p.input, end.pos)])}
		if isKeyword(end, "as") {
			p.next()
			nt := p.next()
			if nt.kind != tName && nt.kind != tQuotedName {
				return nil, p.errAt(nt, "expected a name after as, found %s", nt)
			}
			it.As = nt.text
		}
		items = append(items, it)
		t := p.next()
		if t.kind == tEOF {
			return items, nil
		}
		if t.kind != tOp || t.text != "," {
			return nil, p.errAt(t, "expected , between items, found %s", t)
		}
	}
}

// runeOffset is the byte offset of 1-based character position pos.
func runeOffset(s string, pos int) int {
	n := 1
	for i := range s {
		if n == pos {
			return i
		}
		n++
	}
	return len(s)
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peek2() token {
	if p.i+1 < len(p.toks) {
		return p.toks[p.i+1]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errAt(t token, format string, a ...any) error {
	return &Error{Input: p.input, Pos: t.pos, Msg: fmt.Sprintf(format, a...)}
}

func isKeyword(t token, kw string) bool { return t.kind == tName && strings.EqualFold(t.text, kw) }

func (p *parser) isOp(ops ...string) (token, bool) {
	t := p.peek()
	for _, o := range ops {
		if t.kind == tOp && t.text == o || (o == "and" || o == "or" || o == "not") && isKeyword(t, o) {
			return t, true
		}
	}
	return t, false
}

func (p *parser) deeper(t token) error {
	p.depth++
	if p.depth > maxDepth {
		return p.errAt(t, "expression nested too deeply")
	}
	return nil
}

func (p *parser) expr() (Node, error) {
	defer func() { p.depth-- }()
	if err := p.deeper(p.peek()); err != nil {
		return nil, err
	}
	return p.or()
}

func (p *parser) or() (Node, error) {
	x, err := p.and()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.isOp("or", "||")
		if !ok {
			return x, nil
		}
		p.next()
		y, err := p.and()
		if err != nil {
			return nil, err
		}
		op := "or"
		if t.text == "||" {
			op = "||" // or, or concatenation: the kinds tell
		}
		x = &binary{op: op, x: x, y: y, pos: t.pos}
	}
}

func (p *parser) and() (Node, error) {
	x, err := p.not()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.isOp("and", "&&")
		if !ok {
			return x, nil
		}
		p.next()
		y, err := p.not()
		if err != nil {
			return nil, err
		}
		x = &binary{op: "and", x: x, y: y, pos: t.pos}
	}
}

func (p *parser) not() (Node, error) {
	if t, ok := p.isOp("not", "!"); ok {
		p.next()
		defer func() { p.depth-- }()
		if err := p.deeper(t); err != nil {
			return nil, err
		}
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &unary{op: "not", x: x, pos: t.pos}, nil
	}
	return p.cmp()
}

var cmpOps = []string{"=", "==", "!=", "<>", "<", "<=", ">", ">="}

func (p *parser) cmp() (Node, error) {
	x, err := p.add()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if isKeyword(t, "is") {
		p.next()
		neg := false
		if isKeyword(p.peek(), "not") {
			p.next()
			neg = true
		}
		if n := p.next(); !isKeyword(n, "null") {
			return nil, p.errAt(n, "expected null after is, found %s", n)
		}
		return &isNull{x: x, not: neg, pos: t.pos}, nil
	}
	neg := false
	if isKeyword(t, "not") {
		if n := p.peek2(); isKeyword(n, "in") || isKeyword(n, "between") || isKeyword(n, "like") {
			p.next()
			neg = true
			t = p.peek()
		}
	}
	switch {
	case isKeyword(t, "in"):
		p.next()
		if o := p.next(); o.kind != tOp || o.text != "(" {
			return nil, p.errAt(o, "expected ( after in, found %s", o)
		}
		n := &inList{x: x, not: neg, pos: t.pos}
		for {
			v, err := p.expr()
			if err != nil {
				return nil, err
			}
			n.list = append(n.list, v)
			c := p.next()
			if c.kind == tOp && c.text == ")" {
				return n, nil
			}
			if c.kind != tOp || c.text != "," {
				return nil, p.errAt(c, "expected , or ) in the list of in, found %s", c)
			}
		}
	case isKeyword(t, "between"):
		p.next()
		lo, err := p.add()
		if err != nil {
			return nil, err
		}
		if a := p.next(); !isKeyword(a, "and") {
			return nil, p.errAt(a, "expected and in between ... and ..., found %s", a)
		}
		hi, err := p.add()
		if err != nil {
			return nil, err
		}
		return &between{x: x, lo: lo, hi: hi, not: neg, pos: t.pos}, nil
	case isKeyword(t, "like"):
		p.next()
		s := p.next()
		if s.kind != tString {
			return nil, p.errAt(s, "expected a quoted pattern after like, found %s", s)
		}
		return &like{x: x, pattern: s.text, not: neg, pos: t.pos}, nil
	}
	if t, ok := p.isOp(cmpOps...); ok {
		p.next()
		y, err := p.add()
		if err != nil {
			return nil, err
		}
		op := t.text
		switch op {
		case "==":
			op = "="
		case "<>":
			op = "!="
		}
		if _, chained := p.isOp(cmpOps...); chained {
			return nil, p.errAt(p.peek(), "comparisons do not chain: use and")
		}
		return &binary{op: op, x: x, y: y, pos: t.pos}, nil
	}
	return x, nil
}

func (p *parser) add() (Node, error) {
	x, err := p.mul()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.isOp("+", "-")
		if !ok {
			return x, nil
		}
		p.next()
		y, err := p.mul()
		if err != nil {
			return nil, err
		}
		x = &binary{op: t.text, x: x, y: y, pos: t.pos}
	}
}

func (p *parser) mul() (Node, error) {
	x, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.isOp("*", "/", "%")
		if !ok {
			return x, nil
		}
		p.next()
		y, err := p.unary()
		if err != nil {
			return nil, err
		}
		x = &binary{op: t.text, x: x, y: y, pos: t.pos}
	}
}

func (p *parser) unary() (Node, error) {
	if t, ok := p.isOp("-"); ok {
		p.next()
		defer func() { p.depth-- }()
		if err := p.deeper(t); err != nil {
			return nil, err
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &unary{op: "-", x: x, pos: t.pos}, nil
	}
	return p.primary()
}

func (p *parser) primary() (Node, error) {
	t := p.next()
	switch t.kind {
	case tInt, tFloat, tString:
		return &literal{tok: t, pos: t.pos}, nil
	case tQuotedName:
		return &Column{Name: t.text, Pos: t.pos}, nil
	case tName:
		low := strings.ToLower(t.text)
		switch low {
		case "true", "false":
			return &literal{tok: token{tName, low, t.pos}, pos: t.pos}, nil
		case "date", "timestamp":
			if s := p.peek(); s.kind == tString {
				p.next()
				return &literal{tok: s, kind: low, pos: t.pos}, nil
			}
		case "interval":
			if s := p.peek(); s.kind == tString {
				p.next()
				if _, err := strconv.ParseInt(strings.TrimSpace(s.text), 10, 32); err != nil {
					return nil, p.errAt(s, "expected a whole number of days in interval, found %s", s)
				}
				u := p.next()
				unit := strings.TrimSuffix(strings.ToLower(u.text), "s")
				if u.kind != tName || unit != "day" && unit != "month" && unit != "year" {
					return nil, p.errAt(u, "expected day, month or year after interval %s, found %s", s, u)
				}
				return &literal{tok: token{tString, strings.TrimSpace(s.text), s.pos}, kind: low, unit: unit, pos: t.pos}, nil
			}
		case "null":
			return nil, p.errAt(t, "null is only allowed in 'is null' and 'is not null'")
		case "case":
			return p.caseWhen(t)
		case "cast", "extract":
			if o := p.peek(); o.kind == tOp && o.text == "(" {
				if low == "cast" {
					return p.cast(t)
				}
				return p.extract(t)
			}
		case "and", "or", "not", "is", "in", "between", "like", "as", "when", "then", "else", "end", "from":
			return nil, p.errAt(t, "expected a value, found the keyword %s (quote a column with that name: \"%s\")", t, t.text)
		}
		if o := p.peek(); o.kind == tOp && o.text == "(" {
			p.next()
			call := &Call{Fn: low, Pos: t.pos}
			if c := p.peek(); c.kind == tOp && c.text == ")" {
				p.next()
				return call, nil
			}
			// count(*) is count().
			if c := p.peek(); c.kind == tOp && c.text == "*" && p.peek2().kind == tOp && p.peek2().text == ")" {
				p.i += 2
				return call, nil
			}
			for {
				a, err := p.expr()
				if err != nil {
					return nil, err
				}
				call.Args = append(call.Args, a)
				c := p.next()
				if c.kind == tOp && c.text == ")" {
					return call, nil
				}
				if c.kind != tOp || c.text != "," {
					return nil, p.errAt(c, "expected , or ) in the arguments of %s, found %s", t.text, c)
				}
			}
		}
		return &Column{Name: t.text, Pos: t.pos}, nil
	case tOp:
		if t.text == "(" {
			x, err := p.expr()
			if err != nil {
				return nil, err
			}
			if c := p.next(); c.kind != tOp || c.text != ")" {
				return nil, p.errAt(c, "expected ) to close the ( at position %d, found %s", t.pos, c)
			}
			return x, nil
		}
	}
	return nil, p.errAt(t, "expected a value, found %s", t)
}

func (p *parser) expect(word string, after token) error {
	if t := p.next(); !isKeyword(t, word) {
		return p.errAt(t, "expected %s in the %s at position %d, found %s", word, strings.ToLower(after.text), after.pos, t)
	}
	return nil
}

func (p *parser) closing(open token) error {
	if c := p.next(); c.kind != tOp || c.text != ")" {
		return p.errAt(c, "expected ) to close the ( at position %d, found %s", open.pos, c)
	}
	return nil
}

// caseWhen parses what follows CASE.
func (p *parser) caseWhen(t token) (Node, error) {
	n := &caseWhen{pos: t.pos}
	if !isKeyword(p.peek(), "when") {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		n.x = x
	}
	for isKeyword(p.peek(), "when") {
		p.next()
		w, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expect("then", t); err != nil {
			return nil, err
		}
		v, err := p.caseValue()
		if err != nil {
			return nil, err
		}
		n.whens, n.then = append(n.whens, w), append(n.then, v)
	}
	if len(n.whens) == 0 {
		return nil, p.errAt(p.peek(), "expected when in the case at position %d, found %s", t.pos, p.peek())
	}
	if isKeyword(p.peek(), "else") {
		p.next()
		e, err := p.caseValue()
		if err != nil {
			return nil, err
		}
		if !isNullLiteral(e) {
			n.els = e
		}
	}
	if err := p.expect("end", t); err != nil {
		return nil, err
	}
	return n, nil
}

// caseValue is a value of a case: an expression, or null.
func (p *parser) caseValue() (Node, error) {
	if t := p.peek(); isKeyword(t, "null") {
		p.next()
		return &literal{tok: token{tName, "null", t.pos}, kind: "null", pos: t.pos}, nil
	}
	return p.expr()
}

func isNullLiteral(n Node) bool {
	l, ok := n.(*literal)
	return ok && l.kind == "null"
}

// cast parses CAST(x AS type).
func (p *parser) cast(t token) (Node, error) {
	open := p.next()
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.expect("as", t); err != nil {
		return nil, err
	}
	ty := p.next()
	if ty.kind != tName {
		return nil, p.errAt(ty, "expected a type after as, found %s", ty)
	}
	var args []int32
	if o, ok := p.isOp("("); ok {
		p.next()
		for {
			a := p.next()
			v, err := strconv.ParseInt(a.text, 10, 32)
			if a.kind != tInt || err != nil {
				return nil, p.errAt(a, "expected a number in the type's parentheses, found %s", a)
			}
			args = append(args, int32(v))
			if _, ok := p.isOp(","); !ok {
				break
			}
			p.next()
		}
		if err := p.closing(o); err != nil {
			return nil, err
		}
	}
	if err := p.closing(open); err != nil {
		return nil, err
	}
	return &cast{x: x, to: strings.ToLower(ty.text), args: args, pos: t.pos}, nil
}

// extract parses EXTRACT(part FROM x) as date_part('part', x).
func (p *parser) extract(t token) (Node, error) {
	open := p.next()
	part := p.next()
	if part.kind != tName && part.kind != tString {
		return nil, p.errAt(part, "expected a part (year, month, day, ...) in extract, found %s", part)
	}
	if err := p.expect("from", t); err != nil {
		return nil, err
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if err := p.closing(open); err != nil {
		return nil, err
	}
	lit := &literal{tok: token{tString, strings.ToLower(part.text), part.pos}, pos: part.pos}
	return &Call{Fn: "date_part", Args: []Node{lit, x}, Pos: t.pos}, nil
}
