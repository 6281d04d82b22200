package expr

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Kind is the type of an expression's values. Integers of every width
// are int64, floats float64, dates days since 1970-01-01, timestamps
// nanoseconds since 1970-01-01 UTC, intervals days, and decimals 128-bit
// integers with a precision and scale (Dec).
type Kind uint8

// The kinds of values.
const (
	KindBool Kind = iota + 1
	KindInt
	KindFloat
	KindString
	KindDate
	KindTime
	KindInterval
	KindDecimal
)

func (k Kind) String() string {
	if k > KindDecimal {
		return "?"
	}
	return [...]string{"", "boolean", "integer", "float", "string", "date", "timestamp", "interval", "decimal"}[k]
}

// A is the kind with its article, for messages: "an integer".
func (k Kind) A() string {
	if k == KindInt || k == KindInterval {
		return "an " + k.String()
	}
	return "a " + k.String()
}

// Numeric is true for integers, floats and decimals.
func (k Kind) Numeric() bool { return k == KindInt || k == KindFloat || k == KindDecimal }

// Vec is the value of an expression over a batch: B for booleans, I for
// integers, dates, timestamps and intervals, F for floats, S for strings,
// D for decimals (of type Dec).
// A constant (Const) holds one value and stands for every row. Valid is
// nil when every value is valid. A Vec may share a column's memory: it is
// valid while the batch it came from is.
type Vec struct {
	K     Kind
	Const bool
	B     []bool
	I     []int64
	F     []float64
	S     func(int) string
	D     []decimal128.Num
	Dec   Dec
	Valid []bool
	// own says F was made by the evaluation (not a column's memory), so
	// the operation that consumes it may write its result over it.
	own bool
	// soff and sdata are a plain string column's offsets and bytes
	// (value i is sdata[soff[i]:soff[i+1]]), for comparisons that read
	// them directly instead of calling S for every row; nil otherwise.
	soff  []int32
	sdata []byte
	// didx, dsoff and dsdata are a dictionary column's indices and its
	// dictionary's offsets and bytes (value i is entry didx[i]), for tests
	// that look at each entry once instead of at every row; nil otherwise.
	didx   []int32
	dsoff  []int32
	dsdata []byte
}

// dictLen is the number of a dictionary Vec's entries.
func (v Vec) dictLen() int { return len(v.dsoff) - 1 }

// dictAt is entry j of a dictionary Vec.
func (v Vec) dictAt(j int32) string {
	b := v.dsdata[v.dsoff[j]:v.dsoff[j+1]]
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// bytesAt is string value i of a Vec that has soff.
func (v Vec) bytesAt(i int) []byte { return v.sdata[v.soff[i]:v.soff[i+1]] }

// IsValid says whether value i is not null.
func (v Vec) IsValid(i int) bool { return v.Valid == nil || v.Valid[i] }

func validity(s *Scratch, a arrow.Array) []bool {
	if a.NullN() == 0 {
		return nil
	}
	v := s.bools(a.Len())
	for i := range v {
		v[i] = a.IsValid(i)
	}
	return v
}

func widen[T int8 | int16 | int32 | uint8 | uint16 | uint32 | uint64](s *Scratch, vals []T) []int64 {
	out := s.ints(len(vals))
	for i, v := range vals {
		out[i] = int64(v)
	}
	return out
}

func scale(s *Scratch, vals []int64, by int64) []int64 {
	out := s.ints(len(vals))
	for i, v := range vals {
		out[i] = v * by
	}
	return out
}

// Loader returns how to read a column of type dt as a Vec, and its kind;
// nil for a type expressions do not support. 256-bit decimals are read
// as float64 (exact to about 15 digits).
func Loader(dt arrow.DataType) (Kind, func(arrow.Array) Vec) {
	k, _, load := loader(dt)
	if load == nil {
		return 0, nil
	}
	return k, func(a arrow.Array) Vec { return load(a, nil) }
}

// loader is Loader with the memory a conversion makes taken from a
// Scratch.
func loader(dt arrow.DataType) (Kind, Dec, func(arrow.Array, *Scratch) Vec) {
	k, load := loadKind(dt)
	var d Dec
	switch t := dt.(type) {
	case *arrow.Decimal128Type:
		if k == KindDecimal {
			d = Dec{t.Precision, t.Scale}
		}
	case arrow.FixedWidthDataType:
		if k == KindInt {
			d = Dec{P: intDigits(t.BitWidth(), !arrow.IsUnsignedInteger(dt.ID()))}
		}
	}
	return k, d, load
}

func loadKind(dt arrow.DataType) (Kind, func(arrow.Array, *Scratch) Vec) {
	ints := func(f func(a arrow.Array, s *Scratch) []int64, k Kind) (Kind, func(arrow.Array, *Scratch) Vec) {
		return k, func(a arrow.Array, s *Scratch) Vec { return Vec{K: k, I: f(a, s), Valid: validity(s, a)} }
	}
	switch t := dt.(type) {
	case *arrow.Int64Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 { return a.(*array.Int64).Int64Values() }, KindInt)
	case *arrow.Int32Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 { return widen(s, a.(*array.Int32).Int32Values()) }, KindInt)
	case *arrow.Int16Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 { return widen(s, a.(*array.Int16).Int16Values()) }, KindInt)
	case *arrow.Int8Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 { return widen(s, a.(*array.Int8).Int8Values()) }, KindInt)
	case *arrow.Uint64Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 { return widen(s, a.(*array.Uint64).Uint64Values()) }, KindInt)
	case *arrow.Uint32Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 { return widen(s, a.(*array.Uint32).Uint32Values()) }, KindInt)
	case *arrow.Uint16Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 { return widen(s, a.(*array.Uint16).Uint16Values()) }, KindInt)
	case *arrow.Uint8Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 { return widen(s, a.(*array.Uint8).Uint8Values()) }, KindInt)
	case *arrow.Date32Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 {
			return widen(s, arrow.Int32Traits.CastFromBytes(arrow.Date32Traits.CastToBytes(a.(*array.Date32).Date32Values())))
		}, KindDate)
	case *arrow.Date64Type:
		return ints(func(a arrow.Array, s *Scratch) []int64 {
			v := a.(*array.Date64).Date64Values()
			out := s.ints(len(v))
			for i, d := range v {
				out[i] = floorDiv(int64(d), 86_400_000)
			}
			return out
		}, KindDate)
	case *arrow.TimestampType:
		by := map[arrow.TimeUnit]int64{arrow.Second: 1e9, arrow.Millisecond: 1e6, arrow.Microsecond: 1e3, arrow.Nanosecond: 1}[t.Unit]
		return ints(func(a arrow.Array, s *Scratch) []int64 {
			v := arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(a.(*array.Timestamp).TimestampValues()))
			if by == 1 {
				return v
			}
			return scale(s, v, by)
		}, KindTime)
	case *arrow.Float64Type:
		return KindFloat, func(a arrow.Array, s *Scratch) Vec {
			return Vec{K: KindFloat, F: a.(*array.Float64).Float64Values(), Valid: validity(s, a)}
		}
	case *arrow.Float32Type:
		return KindFloat, func(a arrow.Array, s *Scratch) Vec {
			v := a.(*array.Float32).Float32Values()
			out := s.floats(len(v))
			for i, x := range v {
				out[i] = float64(x)
			}
			return Vec{K: KindFloat, F: out, Valid: validity(s, a)}
		}
	case *arrow.Decimal128Type:
		d := Dec{t.Precision, t.Scale}
		if d.S < 0 || d.S > d.P || d.P > maxDecDigits {
			// Arrow allows a negative scale; DuckDB's decimals do not.
			return KindFloat, func(a arrow.Array, s *Scratch) Vec {
				v := a.(*array.Decimal128).Values()
				out := s.floats(len(v))
				for i, x := range v {
					out[i] = x.ToFloat64(d.S)
				}
				return Vec{K: KindFloat, F: out, Valid: validity(s, a)}
			}
		}
		return KindDecimal, func(a arrow.Array, s *Scratch) Vec {
			return Vec{K: KindDecimal, D: a.(*array.Decimal128).Values(), Dec: d, Valid: validity(s, a)}
		}
	case *arrow.Decimal256Type:
		scale := t.Scale
		return KindFloat, func(a arrow.Array, s *Scratch) Vec {
			v := a.(*array.Decimal256).Values()
			out := s.floats(len(v))
			for i, x := range v {
				out[i] = x.ToFloat64(scale)
			}
			return Vec{K: KindFloat, F: out, Valid: validity(s, a)}
		}
	case *arrow.BooleanType:
		return KindBool, func(a arrow.Array, s *Scratch) Vec {
			b := a.(*array.Boolean)
			out := s.bools(b.Len())
			for i := range out {
				out[i] = b.Value(i)
			}
			return Vec{K: KindBool, B: out, Valid: validity(s, a)}
		}
	}
	if _, ok := dt.(*arrow.StringType); ok {
		return KindString, func(a arrow.Array, sc *Scratch) Vec {
			if d, ok := a.(*array.Dictionary); ok {
				// A reader may hand a string column over as a
				// dictionary (scan does, for a column only its filter
				// reads, where the file has one).
				return dictVec(d, sc)
			}
			str := a.(*array.String)
			v := Vec{K: KindString, S: str.Value, Valid: validity(sc, a)}
			if a.Len() == 0 {
				// Arrow lets an empty array go without offsets.
				return v
			}
			v.soff = str.ValueOffsets()
			if bufs := a.Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
				v.sdata = bufs[2].Bytes()
			} else {
				v.sdata = []byte{} // every value is empty
			}
			return v
		}
	}
	if s := StringAccessor(dt); s != nil {
		return KindString, func(a arrow.Array, sc *Scratch) Vec { return Vec{K: KindString, S: s(a), Valid: validity(sc, a)} }
	}
	return 0, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// StringAccessor returns how to read values of a string-like column
// (string, binary, their large and view forms, and dictionaries of
// those), or nil for another type.
func StringAccessor(dt arrow.DataType) func(arrow.Array) func(int) string {
	switch t := dt.(type) {
	case *arrow.StringType:
		return func(a arrow.Array) func(int) string { return a.(*array.String).Value }
	case *arrow.LargeStringType:
		return func(a arrow.Array) func(int) string { return a.(*array.LargeString).Value }
	case *arrow.StringViewType:
		return func(a arrow.Array) func(int) string { return a.(*array.StringView).Value }
	case *arrow.BinaryType:
		return func(a arrow.Array) func(int) string { return a.(*array.Binary).ValueString }
	case *arrow.LargeBinaryType:
		return func(a arrow.Array) func(int) string { return a.(*array.LargeBinary).ValueString }
	case *arrow.DictionaryType:
		inner := StringAccessor(t.ValueType)
		if inner == nil {
			return nil
		}
		return func(a arrow.Array) func(int) string {
			d := a.(*array.Dictionary)
			vals := inner(d.Dictionary())
			return func(i int) string { return vals(d.GetValueIndex(i)) }
		}
	}
	return nil
}

// dictVec is the Vec of a dictionary of strings: a string a row, with its
// indices and entries beside (didx) when those are int32 and plain.
func dictVec(d *array.Dictionary, sc *Scratch) Vec {
	v := Vec{K: KindString, Valid: validity(sc, d)}
	vals, ok := d.Dictionary().(*array.String)
	if !ok {
		acc := StringAccessor(d.DataType())
		if acc == nil {
			panic("expr: a dictionary of " + d.Dictionary().DataType().String() + " read as strings")
		}
		v.S = acc(d)
		return v
	}
	m := vals.Len()
	if vals.NullN() > 0 {
		// A row whose entry is null is null.
		valid := sc.bools(d.Len())
		for i := range valid {
			j := d.GetValueIndex(i)
			valid[i] = d.IsValid(i) && j >= 0 && j < m && vals.IsValid(j)
		}
		v.Valid = valid
	}
	v.S = func(i int) string {
		// A null row's index may be any value.
		if j := d.GetValueIndex(i); j >= 0 && j < m {
			return vals.Value(j)
		}
		return ""
	}
	idx, ok := d.Indices().(*array.Int32)
	if !ok || m == 0 || vals.NullN() != 0 || d.Len() == 0 {
		return v
	}
	v.didx = idx.Int32Values()
	v.dsoff = vals.ValueOffsets()
	if bufs := vals.Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
		v.dsdata = bufs[2].Bytes()
	} else {
		v.dsdata = []byte{}
	}
	return v
}
