package expr

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Dec is a decimal's precision (digits in all, at most 38) and scale
// (digits after the point). For an integer it is the precision DuckDB
// gives its type when it meets a decimal (3, 5, 10, 19 or 20 digits).
type Dec struct{ P, S int32 }

func (d Dec) String() string { return fmt.Sprintf("decimal(%d,%d)", d.P, d.S) }

// maxDecDigits is decimal128's precision; maxInt64Digits the widest
// decimal DuckDB keeps in 64 bits, past which + and * do not widen a
// result by themselves (they check for overflow instead).
const (
	maxDecDigits   = 38
	maxInt64Digits = 18
)

// OverflowError is a result that does not fit its type (a decimal past
// its precision, an integer past 64 bits): DuckDB's error, not a null or
// a wrapped value.
type OverflowError struct {
	Op   string // addition, multiplication, ...
	Type string // DECIMAL(18,2), BIGINT
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("overflow in %s of %s: cast to a wider type (a decimal of more digits, double)", e.Op, e.Type)
}

// overflow stops an evaluation: Eval recovers it as an error, so the
// vector loops need not return one.
func overflow(op string, t Dec) {
	panic(&OverflowError{Op: op, Type: fmt.Sprintf("DECIMAL(%d,%d)", t.P, t.S)})
}

var (
	pow10Num [maxDecDigits + 1]decimal128.Num
	pow10F   [maxDecDigits + 1]float64
)

func init() {
	for i := range pow10Num {
		pow10Num[i] = decimal128.GetScaleMultiplier(i)
		pow10F[i] = math.Pow10(i)
	}
}

// small is n as an int64, when it is one.
func small(n decimal128.Num) (int64, bool) {
	lo, hi := n.LowBits(), n.HighBits()
	if hi == 0 && lo < 1<<63 || hi == -1 && lo >= 1<<63 {
		return int64(lo), true
	}
	return 0, false
}

// fits says whether |n| < 10^p.
func fits(n decimal128.Num, p int32) bool {
	if v, ok := small(n); ok {
		// Every int64 is below 10^19; |MinInt64| as uint64 is 2^63.
		return p >= 19 || uint64(abs64(v)) < pow10Num[p].LowBits()
	}
	if n.HighBits() == math.MinInt64 && n.LowBits() == 0 {
		return false
	}
	return n.Abs().Less(pow10Num[p])
}

// magnitude is |n| as 128 unsigned bits and whether n is negative.
func magnitude(n decimal128.Num) (hi, lo uint64, neg bool) {
	if n.Sign() < 0 {
		n = n.Negate()
		neg = true
	}
	return uint64(n.HighBits()), n.LowBits(), neg
}

// mulDec is a*b, false when it passes 127 bits.
func mulDec(a, b decimal128.Num) (decimal128.Num, bool) {
	if x, ok := small(a); ok {
		if y, ok := small(b); ok {
			hi, lo := bits.Mul64(uint64(abs64(x)), uint64(abs64(y)))
			if hi < 1<<63 && x != math.MinInt64 && y != math.MinInt64 {
				r := decimal128.New(int64(hi), lo)
				if (x < 0) != (y < 0) {
					r = r.Negate()
				}
				return r, true
			}
		}
	}
	ah, al, an := magnitude(a)
	bh, bl, bn := magnitude(b)
	if ah != 0 && bh != 0 {
		return decimal128.Num{}, false
	}
	ph, pl := bits.Mul64(al, bl)
	// At most one high half is set: the cross product is it times the
	// other's low half.
	ch, cl := bits.Mul64(ah, bl)
	if ah == 0 {
		ch, cl = bits.Mul64(bh, al)
	}
	if ch != 0 {
		return decimal128.Num{}, false
	}
	var carry uint64
	ph, carry = bits.Add64(ph, cl, 0)
	if carry != 0 || ph >= 1<<63 {
		return decimal128.Num{}, false
	}
	r := decimal128.New(int64(ph), pl)
	if an != bn {
		r = r.Negate()
	}
	return r, true
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// upscale is n * 10^by, false when it passes 127 bits.
func upscale(n decimal128.Num, by int32) (decimal128.Num, bool) {
	if by == 0 {
		return n, true
	}
	return mulDec(n, pow10Num[by])
}

// downscale is n / 10^by rounded half away from zero, as DuckDB rounds
// a decimal to fewer digits.
func downscale(n decimal128.Num, by int32) decimal128.Num {
	if by == 0 {
		return n
	}
	if v, ok := small(n); ok && by < 19 {
		p := int64(pow10Num[by].LowBits())
		q, r := v/p, v%p
		if abs64(r)*2 >= p {
			if v < 0 {
				q--
			} else {
				q++
			}
		}
		return decimal128.FromI64(q)
	}
	return n.ReduceScaleBy(by, true)
}

// truncScale is n / 10^by toward zero.
func truncScale(n decimal128.Num, by int32) decimal128.Num {
	if by == 0 {
		return n
	}
	if v, ok := small(n); ok && by < 19 {
		return decimal128.FromI64(v / int64(pow10Num[by].LowBits()))
	}
	return n.ReduceScaleBy(by, false)
}

// rescale moves n from scale from to scale to: rounding when it drops
// digits, false when it gains more than 127 bits hold.
func rescale(n decimal128.Num, from, to int32) (decimal128.Num, bool) {
	if to >= from {
		return upscale(n, to-from)
	}
	return downscale(n, from-to), true
}

// cmpDec orders a (scale as) against b (scale bs).
func cmpDec(a decimal128.Num, as int32, b decimal128.Num, bs int32) int {
	if as != bs {
		x, okx := rescale(a, as, max(as, bs))
		y, oky := rescale(b, bs, max(as, bs))
		if !okx || !oky {
			ra := new(big.Rat).SetFrac(a.BigInt(), pow10Num[as].BigInt())
			rb := new(big.Rat).SetFrac(b.BigInt(), pow10Num[bs].BigInt())
			return ra.Cmp(rb)
		}
		a, b = x, y
	}
	return a.Cmp(b)
}

// DecFloat is n at scale s as a float64, as DuckDB converts it: the
// integer divided by the power of ten.
func DecFloat(n decimal128.Num, s int32) float64 {
	if v, ok := small(n); ok {
		return float64(v) / pow10F[s]
	}
	hi, lo, neg := magnitude(n)
	f := (float64(hi)*(1<<64) + float64(lo)) / pow10F[s]
	if neg {
		return -f
	}
	return f
}

// decText writes n at scale s as DuckDB does: every digit of the scale.
func decText(n decimal128.Num, s int32) string {
	v, ok := small(n)
	if !ok || v == math.MinInt64 {
		return n.ToString(s)
	}
	neg := v < 0
	digits := strconv.FormatInt(abs64(v), 10)
	if s > 0 {
		if len(digits) <= int(s) {
			digits = strings.Repeat("0", int(s)-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-int(s)] + "." + digits[len(digits)-int(s):]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// decOfFloat is f as a decimal of type t, rounded half away from zero;
// false when it does not fit or is not a number.
func decOfFloat(f float64, t Dec) (decimal128.Num, bool) {
	r := math.Round(f * pow10F[t.S])
	if math.IsNaN(r) || math.Abs(r) >= pow10F[t.P] {
		return decimal128.Num{}, false
	}
	if math.Abs(r) < 1<<62 {
		return decimal128.FromI64(int64(r)), true
	}
	bi, _ := big.NewFloat(r).Int(nil)
	return decimal128.FromBigInt(bi), true
}

// decOfString reads a number written in text (with a point, an
// exponent, spaces around) as a decimal of type t, rounded half away
// from zero.
func decOfString(s string, t Dec) (decimal128.Num, bool) {
	s = strings.TrimSpace(s)
	if !plainNumber(s) {
		return decimal128.Num{}, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return decimal128.Num{}, false
	}
	r.Mul(r, new(big.Rat).SetInt(pow10Num[t.S].BigInt()))
	q, m := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 && new(big.Int).Mul(m.Abs(m), big.NewInt(2)).Cmp(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(int64(r.Sign())))
	}
	if q.BitLen() > 127 {
		return decimal128.Num{}, false
	}
	n := decimal128.FromBigInt(q)
	return n, fits(n, t.P)
}

// plainNumber says s is [sign] digits [. digits] [e [sign] at most three
// digits]: what a decimal is written as. big.Rat would also take a
// fraction (1/3) and an exponent of any size, whose power of ten it
// would build.
func plainNumber(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.'); i++ {
		if s[i] != '.' {
			digits++
		}
	}
	if digits == 0 || strings.Count(s[:i], ".") > 1 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		n := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			n++
		}
		if n == 0 || n > 3 {
			return false
		}
	}
	return i == len(s)
}

// intDigits is the precision of an integer type as a decimal: DuckDB's
// widths for its integer types.
func intDigits(bitWidth int, signed bool) int32 {
	switch bitWidth {
	case 8:
		return 3
	case 16:
		return 5
	case 32:
		return 10
	}
	if signed {
		return 19
	}
	return 20
}

// addType is the type of a + b or a - b (DuckDB's rule): the larger
// scale, the larger integer part, one digit more; a result past 18
// digits of inputs within 18 stays 18 digits and checks for overflow.
func addType(a, b Dec) Dec {
	s := max(a.S, b.S)
	p := max(s+max(a.P-a.S, b.P-b.S), max(a.P, b.P)) + 1
	if p > maxInt64Digits && max(a.P, b.P) <= maxInt64Digits {
		p = maxInt64Digits
	}
	return Dec{min(p, maxDecDigits), s}
}

// mulType is the type of a * b: precisions and scales added, with the
// same 18-digit rule as addType; ok is false when the scale passes 38.
func mulType(a, b Dec) (Dec, bool) {
	p, s := a.P+b.P, a.S+b.S
	if s > maxDecDigits {
		return Dec{}, false
	}
	if p > maxInt64Digits && max(a.P, b.P) <= maxInt64Digits && s < maxInt64Digits {
		p = maxInt64Digits
	}
	return Dec{min(p, maxDecDigits), s}, true
}

// commonType is the type two decimals are both given (in a case, a
// coalesce, a comparison): the larger scale and integer part.
func commonType(a, b Dec) Dec {
	s, whole := max(a.S, b.S), max(a.P-a.S, b.P-b.S)
	if whole+s > maxDecDigits {
		// DuckDB keeps the integer digits and gives up digits of scale.
		return Dec{maxDecDigits, maxDecDigits - whole}
	}
	return Dec{whole + s, s}
}

// decLiteral reads a number with a point and no exponent as DuckDB
// types it: DECIMAL(digits, digits after the point).
func decLiteral(text string) (decimal128.Num, Dec, bool) {
	t := strings.ReplaceAll(text, "_", "")
	point := strings.IndexByte(t, '.')
	if point < 0 || strings.ContainsAny(t, "eE") {
		return decimal128.Num{}, Dec{}, false
	}
	digits := t[:point] + t[point+1:]
	d := Dec{P: int32(len(digits)), S: int32(len(t) - point - 1)}
	if d.P > maxDecDigits {
		return decimal128.Num{}, Dec{}, false
	}
	if d.P == 0 {
		d.P = 1
	}
	bi, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return decimal128.Num{}, Dec{}, false
	}
	return decimal128.FromBigInt(bi), d, true
}

// decValue is row j of v, a decimal or an integer, and its scale.
func decValue(v Vec, j int) (decimal128.Num, int32) {
	if v.K == KindInt {
		return decimal128.FromI64(v.I[j]), 0
	}
	return v.D[j], v.Dec.S
}

var decOpNames = map[string]string{"+": "addition", "-": "subtraction", "*": "multiplication", "%": "modulo"}

// decArith is +, -, * or % with a decimal operand and a decimal or
// integer other: exact, of DuckDB's result type.
func (c *compiler) decArith(n *binary, x, y *compiled) (*compiled, error) {
	op := n.op
	a, b := decOf(x), decOf(y)
	var t Dec
	switch op {
	case "+", "-":
		t = addType(a, b)
	case "*":
		var ok bool
		if t, ok = mulType(a, b); !ok {
			return nil, c.errAt(n, "the product of %s and %s needs scale %d, past a decimal's 38: cast a side to double, or to a decimal of a lower scale", a, b, a.S+b.S)
		}
	case "%":
		if max(a.P-a.S, b.P-b.S)+max(a.S, b.S) > maxDecDigits {
			return nil, nil // no decimal holds both: DuckDB's is a double
		}
		t = commonType(a, b)
	default:
		return nil, c.errAt(n, "cannot apply %s to %s and %s", op, x.k.A(), y.k.A())
	}
	return &compiled{k: KindDecimal, dec: t, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
		return arithDec(s, op, x.eval(r, s), y.eval(r, s), t, int(r.NumRows()))
	}}, nil
}

// arithDec computes a op b into decimals of type t; a remainder by zero
// is null, a result past t's precision an OverflowError.
func arithDec(s *Scratch, op string, a, b Vec, t Dec, n int) Vec {
	if a.Const && b.Const {
		n = 1
	}
	out := s.decs(n)
	valid := bothValid(s, a, b, n)
	for i := range out {
		if valid != nil && !valid[i] {
			out[i] = decimal128.Num{}
			continue
		}
		x, xs := decValue(a, at(a, i))
		y, ys := decValue(b, at(b, i))
		var r decimal128.Num
		ok := true
		if op == "*" {
			r, ok = mulDec(x, y)
		} else {
			var okx, oky bool
			x, okx = upscale(x, t.S-xs)
			y, oky = upscale(y, t.S-ys)
			ok = okx && oky
			switch op {
			case "+":
				r = x.Add(y)
				// Two 38-digit values can pass 127 bits: the sign shows it.
				ok = ok && !(x.Sign() == y.Sign() && r.Sign() != x.Sign() && x.Sign() != 0)
			case "-":
				r = x.Sub(y)
				ok = ok && !(x.Sign() != y.Sign() && y.Sign() != 0 && x.Sign() != 0 && r.Sign() != x.Sign())
			case "%":
				if y == (decimal128.Num{}) {
					if valid == nil {
						valid = allValid(s, n)
					}
					valid[i] = false
					continue
				}
				r = remDec(x, y)
			}
		}
		if !ok || !fits(r, t.P) {
			overflow(decOpNames[op], t)
		}
		out[i] = r
	}
	return Vec{K: KindDecimal, Const: a.Const && b.Const, D: out, Dec: t, Valid: valid}
}

// remDec is x % y with the sign of x, as Go's % on integers.
func remDec(x, y decimal128.Num) decimal128.Num {
	if a, ok := small(x); ok {
		if b, ok := small(y); ok && !(a == math.MinInt64 && b == -1) {
			return decimal128.FromI64(a % b)
		}
	}
	_, r := x.Div(y)
	return r
}

// compareDecs compares decimals, or a decimal and an integer, exactly.
func compareDecs(s *Scratch, op string, a, b Vec, n int) Vec {
	if a.Const && b.Const {
		n = 1
	}
	out := s.bools(n)
	for i := range out {
		x, xs := decValue(a, at(a, i))
		y, ys := decValue(b, at(b, i))
		out[i] = holds(op, cmpDec(x, xs, y, ys))
	}
	return Vec{K: KindBool, Const: a.Const && b.Const, B: out, Valid: bothValid(s, a, b, n)}
}

// roundDec is round of a decimal, as DuckDB's: to digits after the point
// (a constant; 0 when not given), half away from zero, in a decimal of
// that scale (the same type when it keeps every digit, scale 0 when
// rounding before the point).
func (c *compiler) roundDec(n *Call, args []*compiled) (*compiled, error) {
	x := args[0]
	var digits int64
	if len(args) == 2 {
		v, ok := constInt(n.Args[1])
		if !ok {
			return nil, c.errAt(n.Args[1], "round of a decimal takes a constant integer number of digits")
		}
		digits = v
	}
	from := x.dec
	if digits >= int64(from.S) {
		return x, nil
	}
	to := Dec{P: from.P, S: int32(max(digits, 0))}
	// The digits dropped, before the point too when negative; past 38
	// every digit goes.
	drop := int32(min(int64(from.S)-digits, maxDecDigits+1))
	return &compiled{k: KindDecimal, dec: to, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
		v := x.eval(r, s)
		out := s.decs(len(v.D))
		for i, d := range v.D {
			if drop > maxDecDigits {
				out[i] = decimal128.Num{}
				continue
			}
			q := downscale(d, drop)
			if digits < 0 {
				// Back to units: rounding to tens cannot pass the precision
				// by more than the one digit a carry adds.
				var ok bool
				if q, ok = upscale(q, int32(-digits)); !ok || !fits(q, to.P) {
					overflow("round", to)
				}
			}
			out[i] = q
		}
		return Vec{K: KindDecimal, Const: v.Const, D: out, Dec: to, Valid: v.Valid}
	}}, nil
}

// floorCeilDec is floor or ceil of a decimal: a decimal of scale 0.
func floorCeilDec(x *compiled, floor bool) *compiled {
	to := Dec{P: x.dec.P, S: 0}
	return &compiled{k: KindDecimal, dec: to, eval: func(r arrow.RecordBatch, s *Scratch) Vec {
		v := x.eval(r, s)
		out := s.decs(len(v.D))
		for i, d := range v.D {
			q := truncScale(d, v.Dec.S)
			if back, _ := upscale(q, v.Dec.S); back != d {
				if floor && d.Sign() < 0 {
					q = q.Sub(decimal128.FromI64(1))
				} else if !floor && d.Sign() > 0 {
					q = q.Add(decimal128.FromI64(1))
				}
			}
			out[i] = q
		}
		return Vec{K: KindDecimal, Const: v.Const, D: out, Dec: to, Valid: v.Valid}
	}}
}

// constInt is the value of an integer literal, or of one negated.
func constInt(n Node) (int64, bool) {
	neg := false
	if u, ok := n.(*unary); ok && u.op == "-" {
		n, neg = u.x, true
	}
	lit, ok := n.(*literal)
	if !ok || lit.kind != "" || lit.tok.kind != tInt {
		return 0, false
	}
	v, err := strconv.ParseInt(lit.tok.text, 10, 32)
	if neg {
		v = -v
	}
	return v, err == nil
}

// Dec is the precision and scale of a decimal expression's values.
func (e *Expr) Dec() Dec { return e.dec }

// AddDec is a+b, false when it passes 38 digits: a decimal sum's check.
func AddDec(a, b decimal128.Num) (decimal128.Num, bool) {
	r := a.Add(b)
	if a.Sign() == b.Sign() && a.Sign() != 0 && r.Sign() != a.Sign() {
		return r, false
	}
	return r, fits(r, maxDecDigits)
}

// DecOfFloat is f as a decimal of scale s, rounded half away from zero
// (a value read back from its float).
func DecOfFloat(f float64, s int32) decimal128.Num {
	n, _ := decOfFloat(f, Dec{P: maxDecDigits, S: s})
	return n
}
