package iceberg

import (
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestConstant: a partition value as the manifests' Avro decodes it, and
// an initial default in the metadata's JSON, become the same column of
// the type's Arrow form, for each type an identity partition or a default
// can have.
func TestConstant(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	day := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	at := time.Date(2026, 12, 7, 4, 5, 6, 789000, time.UTC)
	for _, c := range []struct {
		typ  Type
		avro any
		json string
		want string // the Arrow value's ValueStr (bytes in base64)
	}{
		{"boolean", true, `true`, "true"},
		{"int", int32(-3), `-3`, "-3"},
		{"long", int64(1) << 40, `1099511627776`, "1099511627776"},
		{"long", int32(5), `5`, "5"}, // a partition of an int promoted to long
		{"float", float32(1.5), `1.5`, "1.5"},
		{"double", float64(-0.25), `-0.25`, "-0.25"},
		{"date", day, `"2026-12-07"`, "2026-12-07"},
		{"date", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), `"1969-12-31"`, "1969-12-31"},
		{"time", 4*time.Hour + 5*time.Minute, `"04:05:00"`, "04:05:00.000000"},
		{"timestamp", at, `"2026-12-07T04:05:06.000789"`, "2026-12-07T04:05:06.000789"},
		{"timestamptz", at, `"2026-12-07T04:05:06.000789+00:00"`, "2026-12-07T04:05:06.000789Z"},
		{"timestamp_ns", at, `"2026-12-07T04:05:06.000789"`, "2026-12-07T04:05:06.000789"},
		{"string", "eu", `"eu"`, "eu"},
		{"binary", []byte{0, 0xff}, `"00ff"`, "AP8="},
		{"decimal(9, 2)", big.NewRat(-1234, 100), `"-12.34"`, "-12.34"},
		{"decimal(38, 0)", big.NewRat(128, 1), `"128"`, "128"},
		{"uuid", [16]byte{0xf7, 0x9c, 15: 0xe7}, `"f79c0000-0000-0000-0000-0000000000e7"`, "95wAAAAAAAAAAAAAAAAA5w=="},
		{"fixed[2]", [2]byte{1, 2}, `"0102"`, "AQI="},
	} {
		f := Field{ID: 1, Name: "c", Type: c.typ, InitialDefault: json.RawMessage(c.json)}
		fromAvro, err := avroValue(c.typ, c.avro)
		if err != nil {
			t.Errorf("%s from Avro %v: %v", c.typ, c.avro, err)
			continue
		}
		fromJSON, ok, err := f.Default()
		if err != nil || !ok {
			t.Errorf("%s from JSON %s: %v", c.typ, c.json, err)
			continue
		}
		if string(fromAvro) != string(fromJSON) {
			t.Errorf("%s: %x from Avro, %x from JSON", c.typ, fromAvro, fromJSON)
		}
		col, err := Constant(mem, f, fromAvro, 3)
		if err != nil {
			t.Errorf("%s: %v", c.typ, err)
			continue
		}
		if col.Len() != 3 || col.NullN() != 0 || col.ValueStr(2) != c.want {
			t.Errorf("%s: %d rows, %d nulls, %q; want %q", c.typ, col.Len(), col.NullN(), col.ValueStr(2), c.want)
		}
		col.Release()
	}
	nulls, err := Constant(mem, Field{Name: "c", Type: "date"}, nil, 2)
	if err != nil || nulls.NullN() != 2 {
		t.Errorf("a null value: %v, %v", nulls, err)
	}
	nulls.Release()
	if _, ok, err := (Field{Type: "long"}).Default(); ok || err != nil {
		t.Errorf("no initial-default: ok %v, %v", ok, err)
	}
	for typ, bad := range map[Type]string{"int": `"x"`, "date": `"12/07/2026"`, "decimal(4, 1)": `"1.25"`, "boolean": `1`} {
		if _, _, err := (Field{Name: "c", Type: typ, InitialDefault: json.RawMessage(bad)}).Default(); err == nil {
			t.Errorf("%s default %s read without an error", typ, bad)
		}
	}
}
