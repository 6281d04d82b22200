package iceberg

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"
)

// FieldIDKey is the Arrow field metadata key under which a Parquet
// file's schema, as arrow-go reads it, carries each column's field id.
const FieldIDKey = "PARQUET:field_id"

// ArrowSchema is the Arrow schema of s's top-level columns, as Parquet
// files written for it read (timestamps in microseconds, timestamptz in
// UTC, uuid as 16 fixed bytes). Each field carries its id under
// FieldIDKey.
func ArrowSchema(s *ice.Schema) (*arrow.Schema, error) {
	var fields []arrow.Field
	for _, f := range s.Fields() {
		dt, err := arrowType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("iceberg: column %s: %w", f.Name, err)
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: dt, Nullable: !f.Required,
			Metadata: arrow.NewMetadata([]string{FieldIDKey}, []string{strconv.Itoa(f.ID)})})
	}
	return arrow.NewSchema(fields, nil), nil
}

func arrowType(t ice.Type) (arrow.DataType, error) {
	switch t := t.(type) {
	case ice.BooleanType:
		return arrow.FixedWidthTypes.Boolean, nil
	case ice.Int32Type:
		return arrow.PrimitiveTypes.Int32, nil
	case ice.Int64Type:
		return arrow.PrimitiveTypes.Int64, nil
	case ice.Float32Type:
		return arrow.PrimitiveTypes.Float32, nil
	case ice.Float64Type:
		return arrow.PrimitiveTypes.Float64, nil
	case ice.DecimalType:
		return &arrow.Decimal128Type{Precision: int32(t.Precision()), Scale: int32(t.Scale())}, nil
	case ice.DateType:
		return arrow.FixedWidthTypes.Date32, nil
	case ice.TimeType:
		return arrow.FixedWidthTypes.Time64us, nil
	case ice.TimestampType:
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case ice.TimestampTzType:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case ice.TimestampNsType:
		return &arrow.TimestampType{Unit: arrow.Nanosecond}, nil
	case ice.TimestampTzNsType:
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, nil
	case ice.StringType:
		return arrow.BinaryTypes.String, nil
	case ice.BinaryType:
		return arrow.BinaryTypes.Binary, nil
	case ice.FixedType:
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Len()}, nil
	case ice.UUIDType:
		return &arrow.FixedSizeBinaryType{ByteWidth: 16}, nil
	}
	return nil, fmt.Errorf("type %s is not read by this sluice (nested and newer types are not yet)", t)
}

// FieldID is the Iceberg field id an Arrow field read from a Parquet
// file carries, or -1.
func FieldID(f arrow.Field) int {
	v, ok := f.Metadata.GetValue(FieldIDKey)
	if !ok {
		return -1
	}
	id, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return id
}
