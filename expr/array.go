package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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

// Array stores v, the value of an expression over n rows, as an Arrow
// array of DataType(v.K) (a constant repeated), nulls kept. The caller
// releases it.
func Array(mem memory.Allocator, v Vec, n int) arrow.Array {
	dt := DataType(v.K)
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	b.Reserve(n)
	for i := range n {
		j := at(v, i)
		if !v.IsValid(j) {
			b.AppendNull()
			continue
		}
		switch b := b.(type) {
		case *array.BooleanBuilder:
			b.UnsafeAppend(v.B[j])
		case *array.Int64Builder:
			b.UnsafeAppend(v.I[j])
		case *array.Float64Builder:
			b.UnsafeAppend(v.F[j])
		case *array.StringBuilder:
			b.Append(v.S(j))
		case *array.Date32Builder:
			b.UnsafeAppend(arrow.Date32(v.I[j]))
		case *array.TimestampBuilder:
			b.UnsafeAppend(arrow.Timestamp(v.I[j]))
		}
	}
	return b.NewArray()
}
