package expr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

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
	}
	return strconv.Quote(t.text)
}

var operators = []string{"==", "!=", "<>", "<=", ">=", "&&", "||", "=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ",", "!"}

func lex(input string) ([]token, error) {
	var toks []token
	pos := 0 // characters consumed
	i := 0
	fail := func(p int, format string, a ...any) error {
		return &Error{Input: input, Pos: p, Msg: fmt.Sprintf(format, a...)}
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
			if j < len(input) && (input[j] == '_' || input[j] == '.' || unicode.IsLetter(rune(input[j])) || input[j] >= 0x80) {
				return nil, fail(pos+1+(j-i), "unexpected %q after a number", input[j])
			}
			toks = append(toks, token{kind, input[i:j], start})
			pos += j - i
			i = j
		case r == '\'' || r == '"' || r == '`':
			var b strings.Builder
			j, n := i+1, 1
			closed := false
			for j < len(input) {
				r2, w2 := utf8.DecodeRuneInString(input[j:])
				if r2 == utf8.RuneError && w2 == 1 {
					return nil, fail(pos+n+1, "invalid UTF-8")
				}
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
			what := "quoted name"
			if r == '\'' {
				what = "string"
			}
			if !closed {
				return nil, fail(start, "unterminated %s", what)
			}
			kind := tString
			if r != '\'' {
				kind = tQuotedName
				if b.Len() == 0 {
					return nil, fail(start, "empty column name")
				}
			}
			toks = append(toks, token{kind, b.String(), start})
			i, pos = j, pos+n
		default:
			op := ""
			for _, o := range operators {
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
