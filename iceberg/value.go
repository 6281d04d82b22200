package iceberg

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A column's value that a data file does not hold, but the table says
// (an identity partition's value, a column's initial default), travels
// in Iceberg's single-value binary form (the form of the manifests'
// bounds): little-endian numbers, days, microseconds (nanoseconds for
// the _ns types), UTF-8, a decimal's unscaled value big-endian. It is
// then the same in a plan, a job spec and a Flight ticket (JSON, base64),
// whatever form it was read from.

// Default is f's initial default in the single-value binary form; ok is
// false when f has none.
func (f Field) Default() (v []byte, ok bool, err error) {
	if len(f.InitialDefault) == 0 || string(f.InitialDefault) == "null" {
		return nil, false, nil
	}
	if v, err = jsonValue(f.Type, f.InitialDefault); err != nil {
		return nil, false, fmt.Errorf("iceberg: column %s: initial-default %.40s: %w", f.Name, f.InitialDefault, err)
	}
	return v, true, nil
}

// jsonValue is a value in Iceberg's JSON single-value form (the
// metadata's defaults) as the binary form, for a column of type t.
func jsonValue(t Type, raw json.RawMessage) ([]byte, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	str, isStr := v.(string)
	num, isNum := v.(json.Number)
	wrong := fmt.Errorf("not a %s", t)
	switch t {
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, wrong
		}
		return avroValue(t, b)
	case "int", "long":
		if !isNum {
			return nil, wrong
		}
		n, err := num.Int64()
		if err != nil || (t == "int" && n != int64(int32(n))) {
			return nil, wrong
		}
		return avroValue(t, n)
	case "float", "double":
		if !isNum {
			return nil, wrong
		}
		f, err := num.Float64()
		if err != nil {
			return nil, wrong
		}
		if t == "float" {
			return avroValue(t, float32(f))
		}
		return avroValue(t, f)
	case "string":
		if !isStr {
			return nil, wrong
		}
		return []byte(str), nil
	}
	if !isStr {
		return nil, wrong
	}
	layout := map[Type]string{
		"date": "2006-01-02", "time": "15:04:05.999999999",
		"timestamp": "2006-01-02T15:04:05.999999999", "timestamp_ns": "2006-01-02T15:04:05.999999999",
		"timestamptz": "2006-01-02T15:04:05.999999999Z07:00", "timestamptz_ns": "2006-01-02T15:04:05.999999999Z07:00",
	}
	if l, ok := layout[t]; ok {
		tm, err := time.Parse(l, str)
		if err != nil {
			return nil, err
		}
		if t == "time" {
			return avroValue(t, tm.Sub(time.Date(tm.Year(), tm.Month(), tm.Day(), 0, 0, 0, 0, time.UTC)))
		}
		return avroValue(t, tm)
	}
	if strings.HasPrefix(string(t), "decimal") {
		r, ok := new(big.Rat).SetString(str)
		if !ok {
			return nil, wrong
		}
		return avroValue(t, r)
	}
	if t == "uuid" {
		str = strings.ReplaceAll(str, "-", "")
	}
	b, err := hex.DecodeString(str)
	if err != nil {
		return nil, wrong
	}
	return avroValue(t, b)
}

// avroValue is a value as the manifests' Avro decodes it (a partition
// tuple's: time.Time for dates and timestamps, *big.Rat for decimals, an
// array for fixed) in the binary form, for a column of type t.
func avroValue(t Type, v any) ([]byte, error) {
	wrong := fmt.Errorf("a %T is not a %s", v, t)
	le32 := func(x int64) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(int32(x))) }
	le64 := func(x int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(x)) }
	integer := func() (int64, bool) {
		switch x := v.(type) {
		case int32:
			return int64(x), true
		case int64:
			return x, true
		case int:
			return int64(x), true
		}
		return 0, false
	}
	switch t {
	case "boolean":
		b, ok := v.(bool)
		if !ok {
			return nil, wrong
		}
		if b {
			return []byte{1}, nil
		}
		return []byte{0}, nil
	case "int":
		n, ok := integer()
		if !ok || n != int64(int32(n)) {
			return nil, wrong
		}
		return le32(n), nil
	case "long":
		n, ok := integer()
		if !ok {
			return nil, wrong
		}
		return le64(n), nil
	case "float":
		f, ok := v.(float32)
		if !ok {
			return nil, wrong
		}
		return binary.LittleEndian.AppendUint32(nil, math.Float32bits(f)), nil
	case "double":
		switch f := v.(type) {
		case float32:
			return le64(int64(math.Float64bits(float64(f)))), nil
		case float64:
			return le64(int64(math.Float64bits(f))), nil
		}
		return nil, wrong
	case "date":
		if tm, ok := v.(time.Time); ok {
			days := tm.Unix() / 86400
			if tm.Unix()%86400 < 0 {
				days--
			}
			return le32(days), nil
		}
		if n, ok := integer(); ok {
			return le32(n), nil
		}
		return nil, wrong
	case "time":
		if d, ok := v.(time.Duration); ok {
			return le64(d.Microseconds()), nil
		}
		if n, ok := integer(); ok {
			return le64(n), nil
		}
		return nil, wrong
	case "timestamp", "timestamptz", "timestamp_ns", "timestamptz_ns":
		if tm, ok := v.(time.Time); ok {
			if strings.HasSuffix(string(t), "_ns") {
				return le64(tm.UnixNano()), nil
			}
			return le64(tm.UnixMicro()), nil
		}
		if n, ok := integer(); ok {
			return le64(n), nil
		}
		return nil, wrong
	case "string":
		s, ok := v.(string)
		if !ok {
			return nil, wrong
		}
		return []byte(s), nil
	}
	if dt, err := arrowType(t); err == nil {
		if d, ok := dt.(*arrow.Decimal128Type); ok {
			switch x := v.(type) {
			case *big.Rat:
				unscaled := new(big.Rat).Mul(x, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil)))
				if !unscaled.IsInt() {
					return nil, fmt.Errorf("%s has more digits than scale %d", x.FloatString(int(d.Scale)+3), d.Scale)
				}
				return twosComplement(unscaled.Num()), nil
			case []byte:
				return x, nil
			}
			return nil, wrong
		}
	}
	// binary, fixed[n], uuid: bytes, or an array of them.
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	if s, ok := v.(string); ok && t == "binary" {
		return []byte(s), nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Array && rv.Type().Elem().Kind() == reflect.Uint8 {
		b := make([]byte, rv.Len())
		reflect.Copy(reflect.ValueOf(b), rv)
		return b, nil
	}
	return nil, wrong
}

// twosComplement is n in big-endian two's complement, in the fewest
// bytes.
func twosComplement(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -n-1's bytes, inverted, with a leading 0xff when the sign needs it.
	b := new(big.Int).Sub(new(big.Int).Neg(n), big.NewInt(1)).Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

// Constant is n rows of the value v (in the binary form; nil: null) in
// f's column, of the Arrow type ArrowSchema gives it.
func Constant(mem memory.Allocator, f Field, v []byte, n int) (arrow.Array, error) {
	dt, err := arrowType(f.Type)
	if err != nil {
		return nil, fmt.Errorf("iceberg: column %s: %w", f.Name, err)
	}
	if v == nil {
		return array.MakeArrayOfNull(mem, dt, n), nil
	}
	bad := func() error {
		return fmt.Errorf("iceberg: column %s: a %s value of %d bytes", f.Name, f.Type, len(v))
	}
	u64 := func() (int64, error) {
		switch len(v) {
		case 4:
			return int64(int32(binary.LittleEndian.Uint32(v))), nil
		case 8:
			return int64(binary.LittleEndian.Uint64(v)), nil
		}
		return 0, bad()
	}
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	b.Reserve(n)
	switch b := b.(type) {
	case *array.BooleanBuilder:
		if len(v) != 1 {
			return nil, bad()
		}
		for range n {
			b.Append(v[0] != 0)
		}
	case *array.Int32Builder:
		if len(v) != 4 {
			return nil, bad()
		}
		for range n {
			b.Append(int32(binary.LittleEndian.Uint32(v)))
		}
	case *array.Date32Builder:
		if len(v) != 4 {
			return nil, bad()
		}
		for range n {
			b.Append(arrow.Date32(int32(binary.LittleEndian.Uint32(v))))
		}
	case *array.Int64Builder:
		x, err := u64() // 4 bytes: an int promoted to long
		if err != nil {
			return nil, err
		}
		for range n {
			b.Append(x)
		}
	case *array.Time64Builder:
		x, err := u64()
		if err != nil {
			return nil, err
		}
		for range n {
			b.Append(arrow.Time64(x))
		}
	case *array.TimestampBuilder:
		x, err := u64()
		if err != nil {
			return nil, err
		}
		for range n {
			b.Append(arrow.Timestamp(x))
		}
	case *array.Float32Builder:
		if len(v) != 4 {
			return nil, bad()
		}
		for range n {
			b.Append(math.Float32frombits(binary.LittleEndian.Uint32(v)))
		}
	case *array.Float64Builder:
		var x float64
		switch len(v) {
		case 4: // a float promoted to double
			x = float64(math.Float32frombits(binary.LittleEndian.Uint32(v)))
		case 8:
			x = math.Float64frombits(binary.LittleEndian.Uint64(v))
		default:
			return nil, bad()
		}
		for range n {
			b.Append(x)
		}
	case *array.StringBuilder:
		for range n {
			b.Append(string(v))
		}
	case *array.BinaryBuilder:
		for range n {
			b.Append(v)
		}
	case *array.FixedSizeBinaryBuilder:
		if len(v) != dt.(*arrow.FixedSizeBinaryType).ByteWidth {
			return nil, bad()
		}
		for range n {
			b.Append(v)
		}
	case *array.Decimal128Builder:
		if len(v) == 0 || len(v) > 16 {
			return nil, bad()
		}
		x := new(big.Int).SetBytes(v)
		if v[0]&0x80 != 0 {
			x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(v))))
		}
		d := decimal128.FromBigInt(x)
		if !d.FitsInPrecision(dt.(*arrow.Decimal128Type).Precision) {
			return nil, bad()
		}
		for range n {
			b.Append(d)
		}
	default:
		return nil, errors.New("iceberg: no constant of type " + dt.String())
	}
	return b.NewArray(), nil
}
