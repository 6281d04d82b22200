package arrowsize

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestRecord(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	ib.AppendValues([]int64{1, 2, 3}, nil)
	ints := ib.NewArray()
	defer ints.Release()

	db := array.NewDictionaryBuilder(mem, &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}).(*array.BinaryDictionaryBuilder)
	defer db.Release()
	for _, s := range []string{"ab", "cd", "ab"} {
		if err := db.AppendString(s); err != nil {
			t.Fatal(err)
		}
	}
	dict := db.NewArray()
	defer dict.Release()

	sc := arrow.NewSchema([]arrow.Field{{Name: "i", Type: ints.DataType()}, {Name: "d", Type: dict.DataType()}}, nil)
	rec := array.NewRecordBatch(sc, []arrow.Array{ints, dict}, 3)
	defer rec.Release()

	var want int64
	for _, d := range []arrow.ArrayData{ints.Data(), dict.Data(), dict.Data().Dictionary()} {
		for _, b := range d.Buffers() {
			if b != nil {
				want += int64(b.Len())
			}
		}
	}
	if got := Record(rec); got != want || got < 3*8+3*4+2*4+4 {
		t.Fatalf("Record = %d, want %d (int64s, int32 indices, a two-string dictionary)", got, want)
	}
}
