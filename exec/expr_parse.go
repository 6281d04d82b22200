package exec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The expression language of filter and of aggregate arguments:
//
//	expr    = or
//	or      = and { ("or" | "||") and }
//	and     = not { ("and" | "&&") not }
//	not     = ("not" | "!") not | cmp
//	cmp     = add [ ("=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">=") add
//	              | "is" ["not"] "null" ]
//	add     = mul { ("+" | "-") mul }
//	mul     = unary { ("*" | "/" | "%") unary }
//	unary   = "-" unary | primary
//	primary = number | 'string' | "true" | "false"
//	        | "date" 'YYYY-MM-DD' | "timestamp" 'YYYY-MM-DD[ HH:MM:SS[.fff]]'
//	        | name [ "(" [ expr { "," expr } ] ")" ] | "(" expr ")"
//
// Names are columns, or functions when called; a name that is not a
// plain word is written in double quotes ("trip distance"). Strings are
// in single quotes, a quote doubled inside. Keywords are case-insensitive.

// ParseError is a malformed expression, or one whose types do not fit
// its input: Pos is the 1-based character position of the problem in
// Input.
type ParseError struct {
	Input string
	Pos   int
	Msg   string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("at position %d of %q: %s", e.Pos, e.Input, e.Msg)
}

func (e *ParseError) Is(target error) bool { return target == ErrInvalid }

type tokKind int

const (
	tEOF tokKind = iota
	tName
	tQuotedName
	tInt
	tFloat
	tString
	tOp
)

type token struct {
	kind tokKind
	text string // the value: name, unquoted string, number text, operator
	pos  int    // 1-based character position
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "the end"
	case tString:
		return "'" + t.text + "'"
	case tQuotedName:
		return strconv.Quote(t.text)
	}
	return strconv.Quote(t.text)
}

func lex(input string) ([]token, error) {
	var toks []token
	pos := 0 // characters consumed
	i := 0
	fail := func(p int, format string, a ...any) error {
		return &ParseError{Input: input, Pos: p, Msg: fmt.Sprintf(format, a...)}
	}
	for i < len(input) {
		r, w := utf8.DecodeRuneInString(input[i:])
		start := pos + 1
		switch {
		case r == utf8.RuneError && w == 1:
			return nil, fail(start, "invalid UTF-8")
		case unicode.IsSpace(r):
			i += w
			pos++
		case r == '_' || unicode.IsLetter(r):
			j, n := i, 0
			for j < len(input) {
				r2, w2 := utf8.DecodeRuneInString(input[j:])
				if r2 != '_' && !unicode.IsLetter(r2) && !unicode.IsDigit(r2) && r2 != '.' {
					break
				}
				j += w2
				n++
			}
			toks = append(toks, token{tName, input[i:j], start})
			i, pos = j, pos+n
		case r >= '0' && r <= '9' || r == '.' && i+1 < len(input) && input[i+1] >= '0' && input[i+1] <= '9':
			j := i
			kind := tInt
			for j < len(input) && (input[j] >= '0' && input[j] <= '9' || input[j] == '_') {
				j++
			}
			if j < len(input) && input[j] == '.' {
				kind = tFloat
				j++
				for j < len(input) && input[j] >= '0' && input[j] <= '9' {
					j++
				}
			}
			if j < len(input) && (input[j] == 'e' || input[j] == 'E') {
				k := j + 1
				if k < len(input) && (input[k] == '+' || input[k] == '-') {
					k++
				}
				if k < len(input) && input[k] >= '0' && input[k] <= '9' {
					kind = tFloat
					for k < len(input) && input[k] >= '0' && input[k] <= '9' {
						k++
					}
					j = k
				}
			}
			if j < len(input) && (input[j] == '_' || unicode.IsLetter(rune(input[j]))) {
				return nil, fail(pos+1+(j-i), "unexpected %q after a number", input[j])
			}
			toks = append(toks, token{kind, input[i:j], start})
			pos += j - i
			i = j
		case r == '\'' || r == '"':
			var b strings.Builder
			j, n := i+1, 1
			closed := false
			for j < len(input) {
				r2, w2 := utf8.DecodeRuneInString(input[j:])
				j += w2
				n++
				if r2 == r {
					if j < len(input) && rune(input[j]) == r {
						b.WriteRune(r)
						j++
						n++
						continue
					}
					closed = true
					break
				}
				b.WriteRune(r2)
			}
			if !closed {
				what := "string"
				if r == '"' {
					what = "quoted name"
				}
				return nil, fail(start, "unterminated %s", what)
			}
			kind := tString
			if r == '"' {
				kind = tQuotedName
			}
			toks = append(toks, token{kind, b.String(), start})
			i, pos = j, pos+n
		default:
			op := ""
			for _, o := range []string{"==", "!=", "<>", "<=", ">=", "&&", "||", "=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ",", "!"} {
				if strings.HasPrefix(input[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fail(start, "unexpected character %q", r)
			}
			toks = append(toks, token{tOp, op, start})
			i += len(op)
			pos += len(op)
		}
	}
	toks = append(toks, token{tEOF, "", pos + 1})
	return toks, nil
}

// node is a parsed expression.
type node interface{ position() int }

type (
	colNode struct {
		name string
		pos  int
	}
	litNode struct {
		tok  token  // tInt, tFloat, tString, or tName for true/false
		kind string // "", "date" or "timestamp" for typed literals
		pos  int
	}
	unaryNode struct {
		op  string // "-" or "not"
		x   node
		pos int
	}
	binaryNode struct {
		op   string // normalized: or and = != < <= > >= + - * / %
		x, y node
		pos  int
	}
	isNullNode struct {
		x   node
		not bool
		pos int
	}
	callNode struct {
		fn   string
		args []node
		pos  int
	}
)

func (n *colNode) position() int    { return n.pos }
func (n *litNode) position() int    { return n.pos }
func (n *unaryNode) position() int  { return n.pos }
func (n *binaryNode) position() int { return n.pos }
func (n *isNullNode) position() int { return n.pos }
func (n *callNode) position() int   { return n.pos }

type parser struct {
	input string
	toks  []token
	i     int
	depth int
}

// maxDepth bounds nesting so a hostile expression cannot exhaust the stack.
const maxDepth = 200

// parseExpr parses a whole expression.
func parseExpr(input string) (node, error) {
	toks, err := lex(input)
	if err != nil {
		return nil, err
	}
	p := &parser{input: input, toks: toks}
	n, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "unexpected %s after a complete expression", t)
	}
	return n, nil
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errAt(t token, format string, a ...any) error {
	return &ParseError{Input: p.input, Pos: t.pos, Msg: fmt.Sprintf(format, a...)}
}

func isKeyword(t token, kw string) bool { return t.kind == tName && strings.EqualFold(t.text, kw) }

func (p *parser) isOp(ops ...string) (token, bool) {
	t := p.peek()
	for _, o := range ops {
		if t.kind == tOp && t.text == o || o == "and" && isKeyword(t, "and") || o == "or" && isKeyword(t, "or") || o == "not" && isKeyword(t, "not") {
			return t, true
		}
	}
	return t, false
}

func (p *parser) expr() (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errAt(p.peek(), "expression nested too deeply")
	}
	return p.or()
}

func (p *parser) or() (node, error) {
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
		x = &binaryNode{op: "or", x: x, y: y, pos: t.pos}
	}
}

func (p *parser) and() (node, error) {
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
		x = &binaryNode{op: "and", x: x, y: y, pos: t.pos}
	}
}

func (p *parser) not() (node, error) {
	if t, ok := p.isOp("not", "!"); ok {
		p.next()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, p.errAt(t, "expression nested too deeply")
		}
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &unaryNode{op: "not", x: x, pos: t.pos}, nil
	}
	return p.cmp()
}

func (p *parser) cmp() (node, error) {
	x, err := p.add()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if isKeyword(t, "is") {
		p.next()
		not := false
		if isKeyword(p.peek(), "not") {
			p.next()
			not = true
		}
		if n := p.next(); !isKeyword(n, "null") {
			return nil, p.errAt(n, "expected null after is, found %s", n)
		}
		return &isNullNode{x: x, not: not, pos: t.pos}, nil
	}
	if t, ok := p.isOp("=", "==", "!=", "<>", "<", "<=", ">", ">="); ok {
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
		if _, chained := p.isOp("=", "==", "!=", "<>", "<", "<=", ">", ">="); chained {
			return nil, p.errAt(p.peek(), "comparisons do not chain: use and")
		}
		return &binaryNode{op: op, x: x, y: y, pos: t.pos}, nil
	}
	return x, nil
}

func (p *parser) add() (node, error) {
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
		x = &binaryNode{op: t.text, x: x, y: y, pos: t.pos}
	}
}

func (p *parser) mul() (node, error) {
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
		x = &binaryNode{op: t.text, x: x, y: y, pos: t.pos}
	}
}

func (p *parser) unary() (node, error) {
	if t, ok := p.isOp("-"); ok {
		p.next()
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, p.errAt(t, "expression nested too deeply")
		}
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &unaryNode{op: "-", x: x, pos: t.pos}, nil
	}
	return p.primary()
}

func (p *parser) primary() (node, error) {
	t := p.next()
	switch t.kind {
	case tInt, tFloat, tString:
		return &litNode{tok: t, pos: t.pos}, nil
	case tQuotedName:
		return &colNode{name: t.text, pos: t.pos}, nil
	case tName:
		low := strings.ToLower(t.text)
		switch low {
		case "true", "false":
			return &litNode{tok: token{tName, low, t.pos}, pos: t.pos}, nil
		case "date", "timestamp":
			if s := p.peek(); s.kind == tString {
				p.next()
				return &litNode{tok: s, kind: low, pos: t.pos}, nil
			}
		case "null":
			return nil, p.errAt(t, "null is only allowed in 'is null' and 'is not null'")
		case "and", "or", "not", "is":
			return nil, p.errAt(t, "expected a value, found %s", t)
		}
		if o := p.peek(); o.kind == tOp && o.text == "(" {
			p.next()
			var args []node
			if c := p.peek(); c.kind == tOp && c.text == ")" {
				p.next()
				return &callNode{fn: low, pos: t.pos}, nil
			}
			// count(*) is count().
			if c := p.peek(); c.kind == tOp && c.text == "*" && p.toks[p.i+1].kind == tOp && p.toks[p.i+1].text == ")" {
				p.i += 2
				return &callNode{fn: low, pos: t.pos}, nil
			}
			for {
				a, err := p.expr()
				if err != nil {
					return nil, err
				}
				args = append(args, a)
				c := p.next()
				if c.kind == tOp && c.text == ")" {
					return &callNode{fn: low, args: args, pos: t.pos}, nil
				}
				if c.kind != tOp || c.text != "," {
					return nil, p.errAt(c, "expected , or ) in the arguments of %s, found %s", t.text, c)
				}
			}
		}
		return &colNode{name: t.text, pos: t.pos}, nil
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
