package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DataType is the Arrow type a value of kind k is stored as (see Array);
// nil for an interval, which has none here.
func DataType(k Kind) arrow.DataType {
	switch k {
	case KindBool:
		return arrow.FixedWidthTypes.Boolean
	case KindInt:
		return arrow.PrimitiveTypes.Int64
	case KindFloat:
		return arrow.PrimitiveTypes.Float64
	case KindString:
		return arrow.BinaryTypes.String
	case KindDate:
		return arrow.FixedWidthTypes.Date32
	case KindTime:
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	}
	return nil
}

// TypeOf is the Arrow type v is stored as: DataType(v.K), or a decimal
// of v's precision and scale.
func TypeOf(v Vec) arrow.DataType {
	if v.K == KindDecimal {
		return &arrow.Decimal128Type{Precision: v.Dec.P, Scale: v.Dec.S}
	}
	return DataType(v.K)
}

// Array stores v, the value of an expression over n rows, as an Arrow
// array of TypeOf(v) (a constant repeated), nulls kept. The caller
// releases it.
func Array(mem memory.Allocator, v Vec, n int) arrow.Array {
	b := array.NewBuilder(mem, TypeOf(v))
	defer b.Release()
	b.Reserve(n)
	var valid []bool
	if v.Valid != nil {
		valid = make([]bool, n)
		for i := range valid {
			valid[i] = v.IsValid(at(v, i))
		}
	}
	if v.Const {
		v = repeat(v, n)
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.AppendValues(v.B[:n], valid)
	case *array.Int64Builder:
		b.AppendValues(v.I[:n], valid)
	case *array.Float64Builder:
		b.AppendValues(v.F[:n], valid)
	case *array.StringBuilder:
		for i := range n {
			if valid != nil && !valid[i] {
				b.AppendNull()
			} else {
				b.Append(v.S(i))
			}
		}
	case *array.Date32Builder:
		d := make([]arrow.Date32, n)
		for i, x := range v.I[:n] {
			d[i] = arrow.Date32(x)
		}
		b.AppendValues(d, valid)
	case *array.TimestampBuilder:
		b.AppendValues(arrow.TimestampTraits.CastFromBytes(arrow.Int64Traits.CastToBytes(v.I[:n])), valid)
	case *array.Decimal128Builder:
		b.AppendValues(v.D[:n], valid)
	}
	return b.NewArray()
}

// repeat is a constant's value as n rows.
func repeat(v Vec, n int) Vec {
	out := Vec{K: v.K, Dec: v.Dec}
	switch {
	case v.D != nil:
		out.D = make([]decimal128.Num, n)
		for i := range out.D {
			out.D[i] = v.D[0]
		}
	case v.B != nil:
		out.B = make([]bool, n)
		for i := range out.B {
			out.B[i] = v.B[0]
		}
	case v.I != nil:
		out.I = make([]int64, n)
		for i := range out.I {
			out.I[i] = v.I[0]
		}
	case v.F != nil:
		out.F = make([]float64, n)
		for i := range out.F {
			out.F[i] = v.F[0]
		}
	case v.S != nil:
		s := v.S(0)
		out.S = func(int) string { return s }
	}
	return out
}
