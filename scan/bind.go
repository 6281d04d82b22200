package scan

import (
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/expr"
)

// boundTerm is a term of a filter's conjuncts checked against the
// dataset's schema: the value in the domain of the column's statistics.
type boundTerm struct {
	expr.Term
	typ  arrow.DataType
	part int // index of the partition column, or -1 for a column of the files

	// The value as the statistics see it (see statVal); for timestamps
	// the unit is the file's, so the instant is kept and converted there.
	stat    statVal
	hasStat bool
	instant time.Time
	isTime  bool
	isFloat bool // NaN is never in the statistics: != cannot prune
}

// boundCond is a conjunct: terms at least one of which holds on every
// row the filter keeps.
type boundCond []*boundTerm

// bindConds prepares the conjuncts of a filter for pruning. A term on a
// column the statistics cannot speak for keeps its place (so the
// conjunct prunes nothing) but never excludes anything.
func bindConds(conj []expr.Conjunct, sc *arrow.Schema, parts []partCol) []boundCond {
	var out []boundCond
	for _, c := range conj {
		var bc boundCond
		for _, t := range c {
			idx := sc.FieldIndices(t.Column)
			if len(idx) == 0 {
				bc = nil
				break
			}
			bt := &boundTerm{Term: t, typ: sc.Field(idx[0]).Type, part: -1}
			for i, p := range parts {
				if p.name == t.Column {
					bt.part = i
				}
			}
			bt.prepare()
			bc = append(bc, bt)
		}
		if len(bc) > 0 {
			out = append(out, bc)
		}
	}
	return out
}

// prepare puts the term's value in the domain of the column's statistics.
func (bt *boundTerm) prepare() {
	if bt.Op == expr.OpIsNull || bt.Op == expr.OpNotNull {
		return
	}
	v := bt.Value
	typ := bt.typ
	if d, ok := typ.(*arrow.DictionaryType); ok {
		typ = d.ValueType
	}
	id := typ.ID()
	switch {
	case arrow.IsInteger(id) && !arrow.IsUnsignedInteger(id):
		switch v.K {
		case expr.KindInt:
			bt.stat, bt.hasStat = statVal{kind: kInt, i: v.I[0]}, true
		case expr.KindFloat:
			bt.stat, bt.hasStat = statVal{kind: kFloat, f: v.F[0]}, true
		}
	case id == arrow.FLOAT32 || id == arrow.FLOAT64:
		f := 0.0
		switch v.K {
		case expr.KindInt:
			f = float64(v.I[0])
		case expr.KindFloat:
			f = v.F[0]
		default:
			return
		}
		bt.stat, bt.hasStat, bt.isFloat = statVal{kind: kFloat, f: f}, true, true
	case id == arrow.STRING || id == arrow.LARGE_STRING || id == arrow.BINARY || id == arrow.LARGE_BINARY:
		if v.K == expr.KindString {
			bt.stat, bt.hasStat = statVal{kind: kBytes, b: []byte(v.S(0))}, true
		}
	case id == arrow.DATE32:
		if v.K == expr.KindDate {
			bt.stat, bt.hasStat = statVal{kind: kInt, i: v.I[0]}, true
		}
	case id == arrow.TIMESTAMP:
		if v.K == expr.KindTime {
			bt.instant, bt.isTime = time.Unix(0, v.I[0]).UTC(), true
		}
	}
}

// instantIn is t as a count of unit since the epoch, if it fits.
func instantIn(t time.Time, unit arrow.TimeUnit) (int64, bool) {
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	var per int64
	switch unit {
	case arrow.Second:
		return sec, true
	case arrow.Millisecond:
		per = 1e3
	case arrow.Microsecond:
		per = 1e6
	default:
		per = 1e9
	}
	if sec > math.MaxInt64/per-1 || sec < math.MinInt64/per+1 {
		return 0, false
	}
	return sec*per + nsec/(1e9/per), true
}

// statKind is the domain a literal and a column's min/max are compared in.
type statKind int

const (
	kInt statKind = iota
	kFloat
	kBytes
)

type statVal struct {
	kind statKind
	i    int64
	f    float64
	b    []byte
}

// maxExact is the largest integer every float64 near it represents exactly.
const maxExact = 1 << 53

// compareStat orders a and b; ok is false when they cannot be compared
// exactly (different domains, NaN, an integer beyond float64 precision).
func compareStat(a, b statVal) (c int, ok bool) {
	switch {
	case a.kind == kBytes && b.kind == kBytes:
		return bytesCompare(a.b, b.b), true
	case a.kind == kBytes || b.kind == kBytes:
		return 0, false
	case a.kind == kInt && b.kind == kInt:
		return cmp3(a.i, b.i), true
	}
	af, bf := a.f, b.f
	if a.kind == kInt {
		if a.i > maxExact || a.i < -maxExact {
			return 0, false
		}
		af = float64(a.i)
	}
	if b.kind == kInt {
		if b.i > maxExact || b.i < -maxExact {
			return 0, false
		}
		bf = float64(b.i)
	}
	if math.IsNaN(af) || math.IsNaN(bf) {
		return 0, false
	}
	return cmp3(af, bf), true
}

func cmp3[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func bytesCompare(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return cmp3(int64(len(a)), int64(len(b)))
}

// excludes reports whether no value in [lo, hi] can satisfy "v op lit".
func excludes(op expr.Op, lit, lo, hi statVal, isFloat bool) bool {
	cLo, ok1 := compareStat(lit, lo)
	cHi, ok2 := compareStat(lit, hi)
	if !ok1 || !ok2 {
		return false
	}
	switch op {
	case expr.OpEq:
		return cLo < 0 || cHi > 0
	case expr.OpNe:
		return !isFloat && cLo == 0 && cHi == 0
	case expr.OpLt: // v < lit impossible when lo >= lit
		return cLo <= 0
	case expr.OpLe:
		return cLo < 0
	case expr.OpGt: // v > lit impossible when hi <= lit
		return cHi >= 0
	case expr.OpGe:
		return cHi > 0
	}
	return false
}
