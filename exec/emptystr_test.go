package exec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestEmptyStringBatch: an empty batch whose string column has no
// offsets buffer (arrow-go's own valid form of a zero-length string
// array) goes through extend without a panic, as before expr read a
// column's offsets directly.
func TestEmptyStringBatch(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	empty := array.MakeFromData(array.NewData(arrow.BinaryTypes.String, 0, []*memory.Buffer{nil, nil, nil}, nil, 0, 0))
	rec := array.NewRecordBatch(schema, []arrow.Array{empty}, 0)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	b.AppendValues([]string{"a", "b"}, nil)
	two := array.NewRecordBatch(schema, []arrow.Array{b.NewArray()}, 2)
	var rows []string
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("panic: %v", p)
			}
		}()
		rows, err = collectRows(t, memory.DefaultAllocator, FromBatches(schema, rec, two),
			Extend(Computed{Name: "is_a", Expr: "k = 'a'"}))
	}()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0] != "a true" {
		t.Fatalf("rows %q", rows)
	}
}
