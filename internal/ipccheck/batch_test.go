package ipccheck

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestValidBatch: batches whose buffers lie about their values are
// refused with what is wrong, sound ones pass.
func TestValidBatch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	buf := func(b []byte) *memory.Buffer { return memory.NewBufferBytes(b) }
	i32 := func(vs ...int32) []byte { return arrow.Int32Traits.CastToBytes(vs) }

	dictValues := array.NewData(arrow.BinaryTypes.String, 2, []*memory.Buffer{nil, buf(i32(0, 1, 3)), buf([]byte("abc"))}, nil, 0, 0)
	defer dictValues.Release()
	dictType := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	structType := arrow.StructOf(arrow.Field{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true})
	badUTF8 := array.NewData(arrow.BinaryTypes.String, 2, []*memory.Buffer{nil, buf(i32(0, 1, 2)), buf([]byte{0xff, 0xfe})}, nil, 0, 0)
	defer badUTF8.Release()
	shortStrings := array.NewData(arrow.BinaryTypes.String, 1, []*memory.Buffer{nil, buf(i32(0, 1)), buf([]byte("a"))}, nil, 0, 0)
	defer shortStrings.Release()
	for _, tc := range []struct {
		name, want string
		data       arrow.ArrayData
	}{
		{"ints", "", array.NewData(arrow.PrimitiveTypes.Int32, 3, []*memory.Buffer{nil, buf(i32(1, 2, 3))}, nil, 0, 0)},
		{"dictionary", "", array.NewDataWithDictionary(dictType, 3, []*memory.Buffer{nil, buf(i32(0, 1, 1))}, 0, 0, dictValues)},
		{"short bitmap", "validity bitmap", array.NewData(arrow.PrimitiveTypes.Int32, 9, []*memory.Buffer{buf([]byte{0xff}), buf(i32(1, 2, 3, 4, 5, 6, 7, 8, 9))}, nil, 1, 0)},
		{"index past the dictionary", "dictionary index 2 of a dictionary of 2", array.NewDataWithDictionary(dictType, 3, []*memory.Buffer{nil, buf(i32(0, 2, 1))}, 0, 0, dictValues)},
		{"negative index", "dictionary index -1", array.NewDataWithDictionary(dictType, 1, []*memory.Buffer{nil, buf(i32(-1))}, 0, 0, dictValues)},
		// Under a null, an index may be anything.
		{"index past the dictionary under a null", "", array.NewDataWithDictionary(dictType, 2, []*memory.Buffer{buf([]byte{0b01}), buf(i32(1, 7))}, 1, 0, dictValues)},
		{"index past the dictionary beside a null", "dictionary index 7", array.NewDataWithDictionary(dictType, 3, []*memory.Buffer{buf([]byte{0b101}), buf(i32(1, 0, 7))}, 1, 0, dictValues)},
		{"index past the dictionary among many", "dictionary index 2 of", array.NewDataWithDictionary(dictType, 9, []*memory.Buffer{nil, buf(i32(0, 1, 1, 0, 1, 0, 2, 1, 0))}, 0, 0, dictValues)},
		{"negative index among many", "dictionary index -5", array.NewDataWithDictionary(dictType, 9, []*memory.Buffer{nil, buf(i32(0, 1, 1, 0, 1, 0, 1, 1, -5))}, 0, 0, dictValues)},
		// A struct's fields are checked as columns are: any bytes in a
		// string (Go strings need not be UTF-8), and each field as long
		// as the struct.
		{"struct of non-UTF-8 strings", "", array.NewData(structType, 2, []*memory.Buffer{nil}, []arrow.ArrayData{badUTF8}, 0, 0)},
		{"struct field shorter than the struct", "struct field 0 has 1 values for 2", array.NewData(structType, 2, []*memory.Buffer{nil}, []arrow.ArrayData{shortStrings}, 0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.data.Release()
			col := array.MakeFromData(tc.data)
			defer col.Release()
			rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "c", Type: col.DataType(), Nullable: true}}, nil), []arrow.Array{col}, int64(col.Len()))
			defer rec.Release()
			err := Batch(rec)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("sound batch refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `column "c"`)):
				t.Fatalf("got %v, want an error naming column c and %q", err, tc.want)
			}
		})
	}
}

// TestValidOffsets: string offsets that fall or run past the data are
// refused; any bytes inside are accepted (Go strings need not be UTF-8).
func TestValidOffsets(t *testing.T) {
	buf := func(b []byte) *memory.Buffer { return memory.NewBufferBytes(b) }
	i32 := func(vs ...int32) []byte { return arrow.Int32Traits.CastToBytes(vs) }
	for _, tc := range []struct {
		name, want string
		offs       []int32
		data       string
	}{
		{"sound", "", []int32{0, 1, 3}, "abc"},
		{"not utf-8", "", []int32{0, 1, 2}, "\xff\xfe"},
		{"falling", "offsets fall from 3 to 1", []int32{0, 3, 1}, "abc"},
		{"past the data", "offsets reach 4 in 3 bytes", []int32{0, 1, 4}, "abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := array.NewData(arrow.BinaryTypes.Binary, len(tc.offs)-1, []*memory.Buffer{nil, buf(i32(tc.offs...)), buf([]byte(tc.data))}, nil, 0, 0)
			defer d.Release()
			err := validOffsets(tc.offs, d)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
