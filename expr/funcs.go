package expr

import (
	"cmp"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// The scalar functions, row at a time: they do work per value (a string
// made, a calendar read) that a column loop would not make cheaper.

// rowsOf makes a Vec of kind k over n rows (one when constant), each row
// set by f where every one of strict is valid; f says whether its result
// is valid.
func rowsOf(s *Scratch, k Kind, constant bool, n int, strict []Vec, f func(o *Vec, strs []string, i int) bool) Vec {
	return rowsOfType(s, k, Dec{}, constant, n, strict, f)
}

// rowsOfType is rowsOf for values of a decimal type d as well.
func rowsOfType(s *Scratch, k Kind, d Dec, constant bool, n int, strict []Vec, f func(o *Vec, strs []string, i int) bool) Vec {
	if constant {
		n = 1
	}
	o := Vec{K: k, Const: constant, Dec: d}
	var strs []string
	switch k {
	case KindDecimal:
		o.D = s.decs(n)
	case KindFloat:
		o.F, o.own = s.floats(n), true
	case KindBool:
		o.B = s.bools(n)
	case KindString:
		strs = s.strings(n)
		o.S = func(i int) string { return strs[i] }
	default:
		o.I = s.ints(n)
	}
	valid := s.bools(n)
	null := false
	for i := range n {
		ok := true
		for _, a := range strict {
			if !a.IsValid(at(a, i)) {
				ok = false
				break
			}
		}
		if ok {
			ok = f(&o, strs, i)
		}
		if valid[i] = ok; !ok {
			null = true
			if strs != nil {
				strs[i] = ""
			}
		}
	}
	if null {
		o.Valid = valid
	}
	return o
}

func allConst(vs ...Vec) bool {
	for _, v := range vs {
		if !v.Const {
			return false
		}
	}
	return true
}

// put sets row i of o to row j of v, of o's kind (v converted: an
// integer to a float, a date to a timestamp); false when it is null.
func put(o *Vec, strs []string, i int, v Vec, j int) bool {
	if !v.IsValid(j) {
		return false
	}
	switch o.K {
	case KindFloat:
		o.F[i] = getF(v, j)
	case KindBool:
		o.B[i] = v.B[j]
	case KindString:
		strs[i] = v.S(j)
	case KindTime:
		o.I[i] = getT(v, j)
	case KindDecimal:
		// Into the common type, whose scale may be shorter past 38 digits
		// (rounded then, as DuckDB casts); a value it cannot hold stops
		// the evaluation, as DuckDB's cast does.
		x, xs := decValue(v, j)
		r, ok := rescale(x, xs, o.Dec.S)
		if !ok || !fits(r, o.Dec.P) {
			overflow("conversion", o.Dec)
		}
		o.D[i] = r
	default:
		o.I[i] = v.I[j]
	}
	return true
}

func getF(v Vec, j int) float64 {
	switch v.K {
	case KindFloat:
		return v.F[j]
	case KindDecimal:
		return DecFloat(v.D[j], v.Dec.S)
	}
	return float64(v.I[j])
}

func getT(v Vec, j int) int64 {
	if v.K == KindDate {
		return v.I[j] * 86_400e9
	}
	return v.I[j]
}

// unify is the type values of type (k, d) and x's are both given: see
// common; decimals, or a decimal and an integer, give a decimal wide
// enough for both.
func unify(k Kind, d Dec, x *compiled) (Kind, Dec) {
	if k == KindDecimal && (x.k == KindDecimal || x.k == KindInt) || x.k == KindDecimal && k == KindInt {
		if k == KindInt {
			d = Dec{P: cmp.Or(d.P, 19)}
		}
		e := decOf(x)
		if t := commonType(d, e); t.P < maxDecDigits || (k == KindDecimal) == (x.k == KindDecimal) {
			return KindDecimal, t
		}
		// A decimal and an integer past 38 digits: DuckDB keeps the
		// decimal's scale, and an integer too large for it is an error.
		if k == KindInt {
			d = e
		}
		return KindDecimal, Dec{maxDecDigits, d.S}
	}
	if k == KindInt && x.k == KindInt {
		return KindInt, Dec{P: max(cmp.Or(d.P, 19), decOf(x).P)}
	}
	return common(k, x.k), Dec{}
}

// common is the kind values of kinds a and b are both given (an integer
// and a float give a float, a date and a timestamp a timestamp); 0 when
// there is none.
func common(a, b Kind) Kind {
	switch {
	case a == b:
		return a
	case a.Numeric() && b.Numeric():
		return KindFloat
	case (a == KindDate || a == KindTime) && (b == KindDate || b == KindTime):
		return KindTime
	}
	return 0
}

func (c *compiler) caseWhen(n *caseWhen) (*compiled, error) {
	var conds, vals []*compiled
	for i, w := range n.whens {
		var cond *compiled
		var err error
		if n.x != nil {
			cond, err = c.comparison(&binary{op: "=", x: n.x, y: w, pos: w.position()})
		} else if cond, err = c.compile(w); err == nil && cond.k != KindBool {
			err = c.errAt(w, "a when of a case without an operand needs a condition, got %s", cond.k.A())
		}
		if err != nil {
			return nil, err
		}
		var v *compiled // nil: null
		if !isNullLiteral(n.then[i]) {
			if v, err = c.compile(n.then[i]); err != nil {
				return nil, err
			}
		}
		conds, vals = append(conds, cond), append(vals, v)
	}
	nodes := n.then
	if n.els != nil {
		v, err := c.compile(n.els)
		if err != nil {
			return nil, err
		}
		vals, nodes = append(vals, v), append(nodes[:len(nodes):len(nodes)], n.els)
	}
	var k Kind
	var d Dec
	var first *compiled
	for i, v := range vals {
		if v == nil {
			continue
		}
		if first == nil {
			first, k, d = v, v.k, v.dec
		} else if k, d = unify(k, d, v); k == 0 {
			return nil, c.errAt(nodes[i], "the values of a case must be of one kind: %s and %s", first.k.A(), v.k.A())
		}
	}
	if first == nil {
		return nil, c.errAt(n, "every value of this case is null: there is no kind to give it")
	}
	return &compiled{k: k, dec: d, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
		cv := make([]Vec, len(conds))
		vv := make([]Vec, len(vals))
		for i := range conds {
			cv[i] = conds[i].eval(r, s)
		}
		for i, v := range vals {
			if v == nil {
				vv[i] = Vec{K: k, Const: true, Valid: []bool{false}}
			} else {
				vv[i] = v.eval(r, s)
			}
		}
		return rowsOfType(s, k, d, allConst(cv...) && allConst(vv...), int(r.NumRows()), nil, func(o *Vec, strs []string, i int) bool {
			for w, cond := range cv {
				if j := at(cond, i); cond.IsValid(j) && cond.B[j] {
					return put(o, strs, i, vv[w], at(vv[w], i))
				}
			}
			if len(vv) > len(cv) {
				e := vv[len(cv)]
				return put(o, strs, i, e, at(e, i))
			}
			return false
		})
	}}, nil
}

// castKinds are the type names cast takes, as DuckDB spells them.
var castKinds = map[string]Kind{
	"integer": KindInt, "int": KindInt, "int4": KindInt, "int8": KindInt, "int64": KindInt, "bigint": KindInt,
	"smallint": KindInt, "tinyint": KindInt, "hugeint": KindInt,
	"double": KindFloat, "float": KindFloat, "float8": KindFloat, "real": KindFloat, "float4": KindFloat,
	"decimal": KindDecimal, "numeric": KindDecimal,
	"varchar": KindString, "text": KindString, "string": KindString,
	"date": KindDate, "timestamp": KindTime, "datetime": KindTime, "boolean": KindBool, "bool": KindBool,
}

// cast converts as DuckDB does, except that a value DuckDB refuses to
// convert (a string that is no number, a float beyond int64) is null
// here rather than an error of the whole query.
func (c *compiler) cast(n *cast) (*compiled, error) {
	to, ok := castKinds[n.to]
	if !ok {
		return nil, c.errAt(n, "cannot cast to %s (types: integer, bigint, double, decimal(p,s), varchar, date, timestamp, boolean)", n.to)
	}
	var d Dec
	if to == KindDecimal {
		// DuckDB's decimal without arguments is DECIMAL(18,3).
		d = Dec{18, 3}
		switch len(n.args) {
		case 2:
			d.S = n.args[1]
			fallthrough
		case 1:
			d.P = n.args[0]
			if len(n.args) == 1 {
				d.S = 0
			}
		}
		if len(n.args) > 2 || d.P < 1 || d.P > maxDecDigits || d.S < 0 || d.S > d.P {
			return nil, c.errAt(n, "a decimal's precision is 1 to 38 digits and its scale 0 to the precision, got %s", n.to+fmtArgs(n.args))
		}
	} else if len(n.args) > 0 {
		return nil, c.errAt(n, "%s takes no arguments in parentheses", n.to)
	}
	x, err := c.compile(n.x)
	if err != nil {
		return nil, err
	}
	from := x.k
	bad := func() error { return c.errAt(n, "cannot cast %s to %s", from.A(), n.to) }
	var f func(o *Vec, strs []string, i int, v Vec, j int) bool
	switch to {
	case KindDecimal:
		switch from {
		case KindInt, KindFloat, KindString, KindDecimal, KindBool:
			f = func(o *Vec, _ []string, i int, v Vec, j int) bool {
				var r decimal128.Num
				ok := true
				switch v.K {
				case KindFloat:
					r, ok = decOfFloat(v.F[j], d)
				case KindString:
					r, ok = decOfString(v.S(j), d)
				case KindBool:
					r, ok = upscale(decimal128.FromI64(boolInt(v.B[j])), d.S)
				default:
					x, xs := decValue(v, j)
					r, ok = rescale(x, xs, d.S)
				}
				// A value the type cannot hold is null (DuckDB stops).
				if !ok || !fits(r, d.P) {
					return false
				}
				o.D[i] = r
				return true
			}
		default:
			return nil, bad()
		}
	case KindInt:
		switch from {
		case KindInt, KindBool, KindFloat, KindString, KindDecimal:
			f = func(o *Vec, _ []string, i int, v Vec, j int) bool {
				switch v.K {
				case KindDecimal:
					// Rounded half away from zero, as DuckDB.
					x, ok := small(downscale(v.D[j], v.Dec.S))
					o.I[i] = x
					return ok
				case KindInt:
					o.I[i] = v.I[j]
				case KindBool:
					o.I[i] = boolInt(v.B[j])
				case KindFloat:
					// DuckDB casts a float to the nearest integer, ties to even.
					r := math.RoundToEven(v.F[j])
					if math.IsNaN(r) || r < -9.223372036854775e18 || r > 9.223372036854775e18 {
						return false
					}
					o.I[i] = int64(r)
				default:
					x, err := strconv.ParseInt(strings.TrimSpace(v.S(j)), 10, 64)
					if err != nil {
						return false
					}
					o.I[i] = x
				}
				return true
			}
		default:
			return nil, bad()
		}
	case KindFloat:
		switch from {
		case KindInt, KindFloat, KindBool, KindString, KindDecimal:
			f = func(o *Vec, _ []string, i int, v Vec, j int) bool {
				switch v.K {
				case KindBool:
					o.F[i] = float64(boolInt(v.B[j]))
				case KindString:
					x, err := strconv.ParseFloat(strings.TrimSpace(v.S(j)), 64)
					if err != nil {
						return false
					}
					o.F[i] = x
				default:
					o.F[i] = getF(v, j)
				}
				return true
			}
		default:
			return nil, bad()
		}
	case KindString:
		if from == KindInterval {
			return nil, bad()
		}
		f = func(o *Vec, strs []string, i int, v Vec, j int) bool { strs[i] = text(v, j); return true }
	case KindDate:
		switch from {
		case KindDate, KindTime, KindString:
			f = func(o *Vec, _ []string, i int, v Vec, j int) bool {
				switch v.K {
				case KindDate:
					o.I[i] = v.I[j]
				case KindTime:
					o.I[i] = floorDiv(v.I[j], 86_400e9)
				default:
					d, ok := parseDate(strings.TrimSpace(v.S(j)))
					o.I[i] = d
					return ok
				}
				return true
			}
		default:
			return nil, bad()
		}
	case KindTime:
		switch from {
		case KindDate, KindTime, KindString:
			f = func(o *Vec, _ []string, i int, v Vec, j int) bool {
				if v.K == KindString {
					t, ok := parseTimestamp(strings.TrimSpace(v.S(j)))
					o.I[i] = t
					return ok
				}
				o.I[i] = getT(v, j)
				return true
			}
		default:
			return nil, bad()
		}
	case KindBool:
		switch from {
		case KindBool, KindInt, KindFloat, KindString, KindDecimal:
			f = func(o *Vec, _ []string, i int, v Vec, j int) bool {
				switch v.K {
				case KindBool:
					o.B[i] = v.B[j]
				case KindString:
					switch strings.ToLower(strings.TrimSpace(v.S(j))) {
					case "true", "t", "1":
						o.B[i] = true
					case "false", "f", "0":
						o.B[i] = false
					default:
						return false
					}
				default:
					o.B[i] = getF(v, j) != 0
				}
				return true
			}
		default:
			return nil, bad()
		}
	}
	return &compiled{k: to, dec: d, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
		v := x.eval(r, s)
		return rowsOfType(s, to, d, v.Const, int(r.NumRows()), []Vec{v}, func(o *Vec, strs []string, i int) bool {
			return f(o, strs, i, v, at(v, i))
		})
	}}, nil
}

func fmtArgs(args []int32) string {
	if len(args) == 0 {
		return ""
	}
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = strconv.Itoa(int(a))
	}
	return "(" + strings.Join(s, ",") + ")"
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// text is row j of v as DuckDB casts it to varchar.
func text(v Vec, j int) string {
	switch v.K {
	case KindString:
		return v.S(j)
	case KindInt:
		return strconv.FormatInt(v.I[j], 10)
	case KindFloat:
		return floatText(v.F[j])
	case KindBool:
		return strconv.FormatBool(v.B[j])
	case KindDate:
		return time.Unix(v.I[j]*86400, 0).UTC().Format("2006-01-02")
	case KindTime:
		return time.Unix(0, v.I[j]).UTC().Format("2006-01-02 15:04:05.999999")
	case KindInterval:
		return strconv.FormatInt(v.I[j], 10) + " days"
	case KindDecimal:
		return decText(v.D[j], v.Dec.S)
	}
	return ""
}

// floatText writes a float as DuckDB does: the shortest digits that read
// back, with ".0" on whole numbers, exponents from 1e16 and below 1e-4.
func floatText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	if a := math.Abs(f); a != 0 && (a >= 1e16 || a < 1e-4) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// concatOp is || between values that are not both booleans: null when
// either is, other kinds written as text.
func concatOp(x, y *compiled) *compiled {
	return &compiled{k: KindString, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
		a, b := x.eval(r, s), y.eval(r, s)
		return rowsOf(s, KindString, allConst(a, b), int(r.NumRows()), []Vec{a, b}, func(o *Vec, strs []string, i int) bool {
			strs[i] = text(a, at(a, i)) + text(b, at(b, i))
			return true
		})
	}}
}

// addMonths is date or timestamp plus or minus an interval of months:
// the same day of a later month, clamped to its last day (as DuckDB).
func (c *compiler) addMonths(n *binary, x, y *compiled) (*compiled, error) {
	m, ym := c.months[y]
	t := x
	if !ym {
		m, t = c.months[x], y
		if n.op != "+" {
			return nil, c.errAt(n, "cannot subtract a date from an interval")
		}
	}
	if n.op == "-" {
		m = -m
	} else if n.op != "+" {
		return nil, c.errAt(n, "cannot apply %s to an interval of months", n.op)
	}
	if t.k != KindDate && t.k != KindTime {
		return nil, c.errAt(n, "an interval of months or years can only be added to or subtracted from a date or timestamp, not %s", t.k.A())
	}
	k := t.k
	return folded(&compiled{k: k, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
		v := t.eval(r, s)
		return rowsOf(s, k, v.Const, int(r.NumRows()), []Vec{v}, func(o *Vec, _ []string, i int) bool {
			tm := civil(v, at(v, i))
			y, mo, d := tm.Date()
			total := int64(y)*12 + int64(mo-1) + m
			ny, nm := int(floorDiv(total, 12)), time.Month(total-floorDiv(total, 12)*12+1)
			d = min(d, daysIn(ny, nm))
			nt := time.Date(ny, nm, d, tm.Hour(), tm.Minute(), tm.Second(), tm.Nanosecond(), time.UTC)
			o.I[i] = fromCivil(k, nt)
			return true
		})
	}}, t), nil
}

func daysIn(y int, m time.Month) int { return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day() }

// civil is row j of a date or timestamp Vec as a UTC time.
func civil(v Vec, j int) time.Time {
	if v.K == KindDate {
		return time.Unix(v.I[j]*86400, 0).UTC()
	}
	return time.Unix(0, v.I[j]).UTC()
}

func fromCivil(k Kind, t time.Time) int64 {
	if k == KindDate {
		return floorDiv(t.Unix(), 86400)
	}
	return t.UnixNano()
}

// datePart is one field of a calendar date and time, as DuckDB's
// date_part names it.
var dateParts = map[string]func(t time.Time) int64{
	"year":    func(t time.Time) int64 { return int64(t.Year()) },
	"month":   func(t time.Time) int64 { return int64(t.Month()) },
	"day":     func(t time.Time) int64 { return int64(t.Day()) },
	"hour":    func(t time.Time) int64 { return int64(t.Hour()) },
	"minute":  func(t time.Time) int64 { return int64(t.Minute()) },
	"second":  func(t time.Time) int64 { return int64(t.Second()) },
	"dow":     func(t time.Time) int64 { return int64(t.Weekday()) },
	"isodow":  func(t time.Time) int64 { return int64((t.Weekday()+6)%7 + 1) },
	"doy":     func(t time.Time) int64 { return int64(t.YearDay()) },
	"quarter": func(t time.Time) int64 { return int64(t.Month()-1)/3 + 1 },
	"week":    func(t time.Time) int64 { _, w := t.ISOWeek(); return int64(w) },
}

// partAliases are the other names of parts, and the functions named for
// a part (year(x) is date_part('year', x)).
var partAliases = map[string]string{
	"years": "year", "months": "month", "days": "day", "hours": "hour", "minutes": "minute", "seconds": "second",
	"dayofweek": "dow", "weekday": "dow", "dayofyear": "doy", "dayofmonth": "day", "weeks": "week", "quarters": "quarter",
}

// partFuncs are the functions named for a part.
var partFuncs = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "day": true, "dayofmonth": true,
	"dayofweek": true, "dayofyear": true, "isodow": true, "hour": true, "minute": true, "second": true}

func partName(p string) string {
	p = strings.ToLower(p)
	if a, ok := partAliases[p]; ok {
		return a
	}
	return p
}

// constString is the text of a string literal argument, for the parts
// and patterns functions take as constants.
func (c *compiler) constString(fn string, a Node, what string) (string, error) {
	if lit, ok := a.(*literal); ok && lit.kind == "" && lit.tok.kind == tString {
		return lit.tok.text, nil
	}
	return "", c.errAt(a, "the %s of %s must be a quoted constant", what, fn)
}

func (c *compiler) datePart(n *Call, part string, x *compiled, at0 Node) (*compiled, error) {
	f, ok := dateParts[partName(part)]
	if !ok && partName(part) != "epoch" {
		return nil, c.errAt(at0, "unknown date part '%s' (year, quarter, month, week, day, dow, isodow, doy, hour, minute, second, epoch)", part)
	}
	if x.k != KindDate && x.k != KindTime {
		return nil, c.errAt(n, "%s needs a date or timestamp, got %s", n.Fn, x.k.A())
	}
	if partName(part) == "epoch" {
		// Seconds with their fraction, a double as in DuckDB.
		return &compiled{k: KindFloat, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
			v := x.eval(r, s)
			return rowsOf(s, KindFloat, v.Const, int(r.NumRows()), []Vec{v}, func(o *Vec, _ []string, i int) bool {
				o.F[i] = float64(getT(v, at(v, i))) / 1e9
				return true
			})
		}}, nil
	}
	return &compiled{k: KindInt, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
		v := x.eval(r, s)
		return rowsOf(s, KindInt, v.Const, int(r.NumRows()), []Vec{v}, func(o *Vec, _ []string, i int) bool {
			o.I[i] = f(civil(v, at(v, i)))
			return true
		})
	}}, nil
}

// truncs truncate a time to the start of its part.
var truncs = map[string]func(t time.Time) time.Time{
	"year":    func(t time.Time) time.Time { return time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC) },
	"quarter": func(t time.Time) time.Time { return time.Date(t.Year(), (t.Month()-1)/3*3+1, 1, 0, 0, 0, 0, time.UTC) },
	"month":   func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC) },
	"week": func(t time.Time) time.Time {
		d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		return d.AddDate(0, 0, -int((t.Weekday()+6)%7))
	},
	"day":    func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC) },
	"hour":   func(t time.Time) time.Time { return t.Truncate(time.Hour) },
	"minute": func(t time.Time) time.Time { return t.Truncate(time.Minute) },
	"second": func(t time.Time) time.Time { return t.Truncate(time.Second) },
}

// unitNanos are the parts date_diff counts as fixed lengths of time.
var unitNanos = map[string]int64{"day": 86_400e9, "hour": 3_600e9, "minute": 60e9, "second": 1e9, "millisecond": 1e6, "microsecond": 1e3}

func (c *compiler) function(n *Call, args []*compiled) (*compiled, error) {
	fn := n.Fn
	count := func(lo, hi int) error {
		if len(args) < lo || len(args) > hi {
			if lo == hi {
				return c.errAt(n, "%s takes %d argument(s), got %d", fn, lo, len(args))
			}
			return c.errAt(n, "%s takes %d to %d arguments, got %d", fn, lo, hi, len(args))
		}
		return nil
	}
	kinds := func(want ...Kind) error {
		for i, k := range want {
			if i < len(args) && args[i].k != k && !(k == KindFloat && args[i].k.Numeric()) {
				return c.errAt(n.Args[i], "argument %d of %s must be %s, got %s", i+1, fn, k.A(), args[i].k.A())
			}
		}
		return nil
	}
	check := func(lo, hi int, want ...Kind) error {
		if err := count(lo, hi); err != nil {
			return err
		}
		return kinds(want...)
	}
	// row makes a function of its arguments' values, null where any is.
	row := func(k Kind, f func(o *Vec, strs []string, i int, v []Vec) bool) *compiled {
		return &compiled{k: k, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
			v := make([]Vec, len(args))
			for i, a := range args {
				v[i] = a.eval(r, s)
			}
			return rowsOf(s, k, allConst(v...), int(r.NumRows()), v, func(o *Vec, strs []string, i int) bool { return f(o, strs, i, v) })
		}}
	}
	str := func(v Vec, i int) string { return v.S(at(v, i)) }
	num := func(v Vec, i int) float64 { return getF(v, at(v, i)) }
	integer := func(v Vec, i int) int64 { return v.I[at(v, i)] }

	if partFuncs[fn] {
		if err := count(1, 1); err != nil {
			return nil, err
		}
		return c.datePart(n, fn, args[0], n)
	}
	switch fn {
	case "date_part", "datepart":
		if err := count(2, 2); err != nil {
			return nil, err
		}
		part, err := c.constString(fn, n.Args[0], "part")
		if err != nil {
			return nil, err
		}
		return c.datePart(n, part, args[1], n.Args[0])
	case "date_trunc", "datetrunc":
		if err := count(2, 2); err != nil {
			return nil, err
		}
		part, err := c.constString(fn, n.Args[0], "part")
		if err != nil {
			return nil, err
		}
		tr, ok := truncs[partName(part)]
		if !ok {
			return nil, c.errAt(n.Args[0], "unknown date part '%s' for date_trunc (year, quarter, month, week, day, hour, minute, second)", part)
		}
		x := args[1]
		if x.k != KindDate && x.k != KindTime {
			return nil, c.errAt(n.Args[1], "date_trunc needs a date or timestamp, got %s", x.k.A())
		}
		return row(x.k, func(o *Vec, _ []string, i int, v []Vec) bool {
			o.I[i] = fromCivil(x.k, tr(civil(v[1], at(v[1], i))))
			return true
		}), nil
	case "date_diff", "datediff":
		if err := count(3, 3); err != nil {
			return nil, err
		}
		part, err := c.constString(fn, n.Args[0], "part")
		if err != nil {
			return nil, err
		}
		part = partName(part)
		for i := 1; i < 3; i++ {
			if k := args[i].k; k != KindDate && k != KindTime {
				return nil, c.errAt(n.Args[i], "argument %d of date_diff must be a date or timestamp, got %s", i+1, k.A())
			}
		}
		months := map[string]int64{"year": 12, "quarter": 3, "month": 1}[part]
		unit := unitNanos[part]
		if months == 0 && unit == 0 && part != "week" {
			return nil, c.errAt(n.Args[0], "unknown date part '%s' for date_diff (year, quarter, month, week, day, hour, minute, second, millisecond, microsecond)", part)
		}
		// Parts but weeks are counted as boundaries crossed, as DuckDB
		// does: 2020-01-31 to 2020-02-01 is one month.
		return row(KindInt, func(o *Vec, _ []string, i int, v []Vec) bool {
			a, b := getT(v[1], at(v[1], i)), getT(v[2], at(v[2], i))
			switch {
			case months > 0:
				ta, tb := time.Unix(0, a).UTC(), time.Unix(0, b).UTC()
				ma := int64(ta.Year())*12 + int64(ta.Month()-1)
				mb := int64(tb.Year())*12 + int64(tb.Month()-1)
				o.I[i] = floorDiv(mb, months) - floorDiv(ma, months)
			case part == "week":
				// Weeks are whole 7 days elapsed, not boundaries, in DuckDB.
				o.I[i] = (b - a) / (7 * 86_400e9)
			default:
				o.I[i] = floorDiv(b, unit) - floorDiv(a, unit)
			}
			return true
		}), nil
	case "coalesce":
		if len(args) == 0 {
			return nil, c.errAt(n, "coalesce takes at least one argument")
		}
		k, d := args[0].k, args[0].dec
		for i, a := range args[1:] {
			if k, d = unify(k, d, a); k == 0 {
				return nil, c.errAt(n.Args[i+1], "the arguments of coalesce must be of one kind: %s and %s", args[0].k.A(), a.k.A())
			}
		}
		return &compiled{k: k, dec: d, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
			v := make([]Vec, len(args))
			for i, a := range args {
				v[i] = a.eval(r, s)
			}
			return rowsOfType(s, k, d, allConst(v...), int(r.NumRows()), nil, func(o *Vec, strs []string, i int) bool {
				for _, x := range v {
					if put(o, strs, i, x, at(x, i)) {
						return true
					}
				}
				return false
			})
		}}, nil
	case "nullif":
		if err := count(2, 2); err != nil {
			return nil, err
		}
		eq, err := c.comparison(&binary{op: "=", x: n.Args[0], y: n.Args[1], pos: n.Pos})
		if err != nil {
			return nil, err
		}
		x := args[0]
		return &compiled{k: x.k, dec: x.dec, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
			a, e := x.eval(r, s), eq.eval(r, s)
			return rowsOfType(s, x.k, x.dec, allConst(a, e), int(r.NumRows()), nil, func(o *Vec, strs []string, i int) bool {
				if j := at(e, i); e.IsValid(j) && e.B[j] {
					return false
				}
				return put(o, strs, i, a, at(a, i))
			})
		}}, nil
	case "upper", "lower", "ucase", "lcase":
		if err := check(1, 1, KindString); err != nil {
			return nil, err
		}
		f := strings.ToUpper
		if fn == "lower" || fn == "lcase" {
			f = strings.ToLower
		}
		return row(KindString, func(o *Vec, strs []string, i int, v []Vec) bool { strs[i] = f(str(v[0], i)); return true }), nil
	case "length", "char_length", "character_length", "len":
		if err := check(1, 1, KindString); err != nil {
			return nil, err
		}
		return row(KindInt, func(o *Vec, _ []string, i int, v []Vec) bool {
			o.I[i] = int64(utf8.RuneCountInString(str(v[0], i)))
			return true
		}), nil
	case "substring", "substr":
		if err := check(2, 3, KindString, KindInt, KindInt); err != nil {
			return nil, err
		}
		return row(KindString, func(o *Vec, strs []string, i int, v []Vec) bool {
			length := int64(math.MaxInt64 / 2)
			if len(v) == 3 {
				length = integer(v[2], i)
			}
			strs[i] = substring(str(v[0], i), integer(v[1], i), length)
			return true
		}), nil
	case "trim", "ltrim", "rtrim":
		if err := check(1, 2, KindString, KindString); err != nil {
			return nil, err
		}
		return row(KindString, func(o *Vec, strs []string, i int, v []Vec) bool {
			cut := " "
			if len(v) == 2 {
				cut = str(v[1], i)
			}
			s := str(v[0], i)
			switch fn {
			case "trim":
				s = strings.Trim(s, cut)
			case "ltrim":
				s = strings.TrimLeft(s, cut)
			default:
				s = strings.TrimRight(s, cut)
			}
			strs[i] = s
			return true
		}), nil
	case "concat":
		if len(args) == 0 {
			return nil, c.errAt(n, "concat takes at least one argument")
		}
		for i, a := range args {
			if a.k == KindInterval {
				return nil, c.errAt(n.Args[i], "concat cannot write an interval")
			}
		}
		// concat skips nulls, as DuckDB's does (|| does not).
		return &compiled{k: KindString, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
			v := make([]Vec, len(args))
			for i, a := range args {
				v[i] = a.eval(r, s)
			}
			return rowsOf(s, KindString, allConst(v...), int(r.NumRows()), nil, func(o *Vec, strs []string, i int) bool {
				var b strings.Builder
				for _, x := range v {
					if j := at(x, i); x.IsValid(j) {
						b.WriteString(text(x, j))
					}
				}
				strs[i] = b.String()
				return true
			})
		}}, nil
	case "replace":
		if err := check(3, 3, KindString, KindString, KindString); err != nil {
			return nil, err
		}
		return row(KindString, func(o *Vec, strs []string, i int, v []Vec) bool {
			s, from := str(v[0], i), str(v[1], i)
			if from != "" {
				s = strings.ReplaceAll(s, from, str(v[2], i))
			}
			strs[i] = s
			return true
		}), nil
	case "strpos", "instr", "position":
		if err := check(2, 2, KindString, KindString); err != nil {
			return nil, err
		}
		return row(KindInt, func(o *Vec, _ []string, i int, v []Vec) bool {
			s := str(v[0], i)
			if k := strings.Index(s, str(v[1], i)); k >= 0 {
				o.I[i] = int64(utf8.RuneCountInString(s[:k])) + 1
			} else {
				o.I[i] = 0
			}
			return true
		}), nil
	case "round":
		if err := check(1, 2, KindFloat, KindInt); err != nil {
			return nil, err
		}
		k := args[0].k
		if k == KindDecimal {
			return c.roundDec(n, args)
		}
		return row(k, func(o *Vec, _ []string, i int, v []Vec) bool {
			var digits int64
			if len(v) == 2 {
				digits = integer(v[1], i)
			}
			if k == KindInt {
				x := integer(v[0], i)
				if digits < -18 {
					x = 0
				} else if digits < 0 {
					p := int64(math.Pow10(int(-digits)))
					q := x / p * p
					if r := x - q; r >= p/2+p%2 {
						q += p
					} else if -r >= p/2+p%2 {
						q -= p
					}
					x = q
				}
				o.I[i] = x
				return true
			}
			o.F[i] = roundTo(num(v[0], i), digits)
			return true
		}), nil
	case "floor", "ceil", "ceiling":
		if err := check(1, 1, KindFloat); err != nil {
			return nil, err
		}
		k := args[0].k
		if k == KindDecimal {
			return floorCeilDec(args[0], fn == "floor"), nil
		}
		f := math.Floor
		if fn != "floor" {
			f = math.Ceil
		}
		return row(k, func(o *Vec, _ []string, i int, v []Vec) bool {
			if k == KindInt {
				o.I[i] = integer(v[0], i)
			} else {
				o.F[i] = f(num(v[0], i))
			}
			return true
		}), nil
	case "sqrt", "ln", "log10", "log2", "exp":
		if err := check(1, 1, KindFloat); err != nil {
			return nil, err
		}
		f := map[string]func(float64) float64{"sqrt": math.Sqrt, "ln": math.Log, "log10": math.Log10, "log2": math.Log2, "exp": math.Exp}[fn]
		// DuckDB stops the query at the square root of a negative number
		// or the logarithm of one not above zero; here that row is null.
		return row(KindFloat, func(o *Vec, _ []string, i int, v []Vec) bool {
			x := num(v[0], i)
			if fn == "sqrt" && x < 0 || fn != "sqrt" && fn != "exp" && x <= 0 {
				return false
			}
			o.F[i] = f(x)
			return true
		}), nil
	case "power", "pow":
		if err := check(2, 2, KindFloat, KindFloat); err != nil {
			return nil, err
		}
		return row(KindFloat, func(o *Vec, _ []string, i int, v []Vec) bool {
			o.F[i] = math.Pow(num(v[0], i), num(v[1], i))
			return true
		}), nil
	case "mod":
		if err := check(2, 2, KindFloat, KindFloat); err != nil {
			return nil, err
		}
		return c.arithmetic(&binary{op: "%", x: n.Args[0], y: n.Args[1], pos: n.Pos})
	}
	return nil, c.errAt(n, "unknown function %s (see sluice filter --help for the functions)", fn)
}

// roundTo rounds half away from zero to digits after the point (before
// it, when negative), as DuckDB rounds a double.
func roundTo(x float64, digits int64) float64 {
	if digits == 0 {
		return math.Round(x)
	}
	p := math.Pow(10, float64(digits))
	r := math.Round(x*p) / p
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return x
	}
	return r
}

// substring is DuckDB's: the characters from 1-based position start
// (counted from the end when negative, 0 the one before the first) for
// length characters (those before start when negative), clipped to s.
func substring(s string, start, length int64) string {
	r := []rune(s)
	size := int64(len(r))
	var from int64
	switch {
	case start > 0:
		from = min(start-1, size)
	case start < 0:
		from = max(size+start, -size-1)
	default:
		from = -1
	}
	var to int64
	if length >= 0 {
		to = from + min(length, size+1)
	} else {
		to, from = from, from+max(length, -size-1)
	}
	from, to = max(from, 0), min(to, size)
	if from >= to {
		return ""
	}
	return string(r[from:to])
}

// regexpMatches is regexp_matches(s, pattern[, options]): whether the
// pattern matches anywhere in s (RE2 syntax, as DuckDB's). The pattern is
// a constant, compiled once.
func (c *compiler) regexpMatches(n *Call, args []*compiled) (*compiled, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, c.errAt(n, "regexp_matches takes 2 or 3 arguments, got %d", len(args))
	}
	if args[0].k != KindString {
		return nil, c.errAt(n.Args[0], "argument 1 of regexp_matches must be a string, got %s", args[0].k.A())
	}
	pat, err := c.constString("regexp_matches", n.Args[1], "pattern")
	if err != nil {
		return nil, err
	}
	if len(args) == 3 {
		opts, err := c.constString("regexp_matches", n.Args[2], "options")
		if err != nil {
			return nil, err
		}
		for _, o := range opts {
			switch o {
			case 'i':
				pat = "(?i)" + pat
			case 's':
				pat = "(?s)" + pat
			case 'c':
			default:
				return nil, c.errAt(n.Args[2], "unknown regexp_matches option %q (i, c, s)", o)
			}
		}
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, c.errAt(n.Args[1], "bad pattern: %v", err)
	}
	x := args[0]
	return selective(func(r arrow.RecordBatch, s *Scratch, sel []bool) Vec {
		return stringMatch(s, re.MatchString, x.eval(r, s), int(r.NumRows()), sel)
	}), nil
}
