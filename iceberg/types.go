package iceberg

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// FieldIDKey is the Arrow field metadata key under which a Parquet
// file's schema, as arrow-go reads it, carries each column's field id.
const FieldIDKey = "PARQUET:field_id"

// ArrowSchema is the Arrow schema of fields, as Parquet files written for
// them read (timestamps in microseconds, timestamptz in UTC, uuid as 16
// fixed bytes). Each field carries its id under FieldIDKey.
func ArrowSchema(fields []Field) (*arrow.Schema, error) {
	var out []arrow.Field
	for _, f := range fields {
		dt, err := arrowType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("iceberg: column %s: %w", f.Name, err)
		}
		out = append(out, arrow.Field{Name: f.Name, Type: dt, Nullable: !f.Required,
			Metadata: arrow.NewMetadata([]string{FieldIDKey}, []string{strconv.Itoa(f.ID)})})
	}
	return arrow.NewSchema(out, nil), nil
}

func arrowType(t Type) (arrow.DataType, error) {
	switch t {
	case "boolean":
		return arrow.FixedWidthTypes.Boolean, nil
	case "int":
		return arrow.PrimitiveTypes.Int32, nil
	case "long":
		return arrow.PrimitiveTypes.Int64, nil
	case "float":
		return arrow.PrimitiveTypes.Float32, nil
	case "double":
		return arrow.PrimitiveTypes.Float64, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "time":
		return arrow.FixedWidthTypes.Time64us, nil
	case "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case "timestamptz":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case "timestamp_ns":
		return &arrow.TimestampType{Unit: arrow.Nanosecond}, nil
	case "timestamptz_ns":
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, nil
	case "string":
		return arrow.BinaryTypes.String, nil
	case "binary":
		return arrow.BinaryTypes.Binary, nil
	case "uuid":
		return &arrow.FixedSizeBinaryType{ByteWidth: 16}, nil
	}
	var p, sc, n int
	if _, err := fmt.Sscanf(string(t), "decimal(%d, %d)", &p, &sc); err == nil && p >= 1 && p <= 38 && sc >= 0 && sc <= p {
		return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(sc)}, nil
	}
	if _, err := fmt.Sscanf(string(t), "decimal(%d,%d)", &p, &sc); err == nil && p >= 1 && p <= 38 && sc >= 0 && sc <= p {
		return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(sc)}, nil
	}
	if _, err := fmt.Sscanf(string(t), "fixed[%d]", &n); err == nil && n > 0 {
		return &arrow.FixedSizeBinaryType{ByteWidth: n}, nil
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
