package scan

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// boundTerm is a term checked against the dataset's schema: the scalar
// the row filter compares with, and the literal in the domain of the
// column's statistics.
type boundTerm struct {
	Term
	typ  arrow.DataType
	part int // index of the partition column, or -1 for a column of the files

	scalar scalar.Scalar // for the row filter
	fn     string        // compute function

	// The literal as the statistics see it (see statVal); for timestamps
	// the unit is the file's, so the instant is kept and converted there.
	stat    statVal
	hasStat bool
	instant time.Time
	isTime  bool
	isFloat bool // NaN is never in the statistics: != cannot prune
}

var opFunc = [...]string{OpEq: "equal", OpNe: "not_equal", OpLt: "less", OpLe: "less_equal", OpGt: "greater", OpGe: "greater_equal"}

// bind checks every term of f against the dataset schema (file columns
// then partition columns) and prepares it.
func bind(f *Filter, sc *arrow.Schema, parts []partCol) ([]*boundTerm, error) {
	if f == nil {
		return nil, nil
	}
	out := make([]*boundTerm, 0, len(f.Terms))
	for _, t := range f.Terms {
		errAt := func(pos int, format string, a ...any) error {
			return &FilterError{Src: f.src, Pos: pos, Msg: fmt.Sprintf(format, a...)}
		}
		idx := sc.FieldIndices(t.Column)
		if len(idx) == 0 {
			return nil, errAt(t.ColPos, "no column %s in the dataset (have %s)", quoteIdent(t.Column), fieldList(sc))
		}
		field := sc.Field(idx[0])
		bt := &boundTerm{Term: t, typ: field.Type, part: -1, fn: opFunc[t.Op]}
		for i, p := range parts {
			if p.name == t.Column {
				bt.part = i
			}
		}
		if err := bt.prepare(); err != nil {
			return nil, errAt(t.ValPos, "%s is %s: %v", quoteIdent(t.Column), field.Type, err)
		}
		out = append(out, bt)
	}
	return out, nil
}

func fieldList(sc *arrow.Schema) string {
	const most = 12
	s := ""
	for i, f := range sc.Fields() {
		if i == most {
			return s + fmt.Sprintf(", ... %d more", sc.NumFields()-most)
		}
		if i > 0 {
			s += ", "
		}
		s += quoteIdent(f.Name)
	}
	if s == "" {
		return "none"
	}
	return s
}

// prepare makes the scalar and the statistics literal for the column's type.
func (bt *boundTerm) prepare() error {
	lit := bt.Value
	typ := bt.typ
	if d, ok := typ.(*arrow.DictionaryType); ok {
		typ = d.ValueType // compute decodes the dictionary to compare
	}
	wantNumber := func() error {
		if lit.Kind != LitNumber {
			return fmt.Errorf("compare it with a number, not %s", litDescr(lit))
		}
		return nil
	}
	wantString := func() error {
		if lit.Kind != LitString {
			return fmt.Errorf("compare it with a quoted string, not %s", litDescr(lit))
		}
		return nil
	}
	id := typ.ID()
	switch {
	case arrow.IsInteger(id):
		if err := wantNumber(); err != nil {
			return err
		}
		bits := typ.(arrow.FixedWidthDataType).BitWidth()
		var s scalar.Scalar
		if lit.IsInt {
			var err error
			if arrow.IsUnsignedInteger(id) {
				if lit.Int >= 0 && (bits == 64 || lit.Int < 1<<bits) {
					s, err = scalar.MakeUnsignedIntegerScalar(uint64(lit.Int), bits)
				}
			} else if bits == 64 || lit.Int >= -(1<<(bits-1)) && lit.Int < 1<<(bits-1) {
				s, err = scalar.MakeIntegerScalar(lit.Int, bits)
			}
			if err != nil {
				return err
			}
		}
		if s == nil {
			// Out of the type's range or fractional: compare as float64,
			// which compute does by casting the column.
			s = scalar.NewFloat64Scalar(lit.Float)
		}
		bt.scalar = s
		if !arrow.IsUnsignedInteger(id) {
			bt.stat, bt.hasStat = numStat(lit), true
		}
	case id == arrow.FLOAT32 || id == arrow.FLOAT64:
		if err := wantNumber(); err != nil {
			return err
		}
		if id == arrow.FLOAT32 && float64(float32(lit.Float)) == lit.Float {
			bt.scalar = scalar.NewFloat32Scalar(float32(lit.Float))
		} else {
			bt.scalar = scalar.NewFloat64Scalar(lit.Float)
		}
		bt.stat, bt.hasStat, bt.isFloat = statVal{kind: kFloat, f: lit.Float}, true, true
	case arrow.IsDecimal(id):
		if err := wantNumber(); err != nil {
			return err
		}
		bt.scalar = scalar.NewFloat64Scalar(lit.Float)
	case id == arrow.STRING || id == arrow.LARGE_STRING || id == arrow.BINARY || id == arrow.LARGE_BINARY:
		if err := wantString(); err != nil {
			return err
		}
		s, err := scalar.MakeScalarParam(lit.Text, typ)
		if err != nil {
			return err
		}
		bt.scalar = s
		bt.stat, bt.hasStat = statVal{kind: kBytes, b: []byte(lit.Text)}, true
	case id == arrow.DATE32 || id == arrow.DATE64:
		if lit.Kind != LitString && lit.Kind != LitDate {
			return fmt.Errorf("compare it with a date 'YYYY-MM-DD', not %s", litDescr(lit))
		}
		t, err := parseDate(lit.Text)
		if err != nil {
			return err
		}
		days := t.Unix() / 86400
		if id == arrow.DATE32 {
			bt.scalar = scalar.NewDate32Scalar(arrow.Date32(days))
			bt.stat, bt.hasStat = statVal{kind: kInt, i: days}, true
		} else {
			bt.scalar = scalar.NewDate64Scalar(arrow.Date64(days * 86400_000))
		}
	case id == arrow.TIMESTAMP:
		if lit.Kind != LitString && lit.Kind != LitDate {
			return fmt.Errorf("compare it with a quoted date or time, not %s", litDescr(lit))
		}
		t, err := parseDateTime(lit.Text)
		if err != nil {
			return err
		}
		tt := typ.(*arrow.TimestampType)
		v, ok := instantIn(t, tt.Unit)
		if !ok {
			return fmt.Errorf("'%s' is out of the range of %s", lit.Text, typ)
		}
		bt.scalar = scalar.NewTimestampScalar(arrow.Timestamp(v), typ)
		bt.instant, bt.isTime = t, true
	case id == arrow.BOOL:
		if lit.Kind != LitBool {
			return fmt.Errorf("compare it with true or false, not %s", litDescr(lit))
		}
		bt.scalar = scalar.NewBooleanScalar(lit.Bool)
	default:
		return fmt.Errorf("--filter cannot compare columns of this type")
	}
	return nil
}

func litDescr(l Literal) string {
	switch l.Kind {
	case LitNumber:
		return "the number " + l.Text
	case LitString:
		return "the string '" + l.Text + "'"
	case LitDate:
		return "date '" + l.Text + "'"
	}
	return l.Text
}

func numStat(l Literal) statVal {
	if l.IsInt {
		return statVal{kind: kInt, i: l.Int}
	}
	return statVal{kind: kFloat, f: l.Float}
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
func excludes(op Op, lit, lo, hi statVal, isFloat bool) bool {
	cLo, ok1 := compareStat(lit, lo)
	cHi, ok2 := compareStat(lit, hi)
	if !ok1 || !ok2 {
		return false
	}
	switch op {
	case OpEq:
		return cLo < 0 || cHi > 0
	case OpNe:
		return !isFloat && cLo == 0 && cHi == 0
	case OpLt: // v < lit impossible when lo >= lit
		return cLo <= 0
	case OpLe:
		return cLo < 0
	case OpGt: // v > lit impossible when hi <= lit
		return cHi >= 0
	case OpGe:
		return cHi > 0
	}
	return false
}
