package expr

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestEmptyStringColumn: an empty string column whose offsets buffer is
// absent (arrow-go's valid form of a zero-length array) evaluates to no rows, not a panic.
func TestEmptyStringColumn(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	nilBufs := array.MakeFromData(array.NewData(arrow.BinaryTypes.String, 0, []*memory.Buffer{nil, nil, nil}, nil, 0, 0))
	for name, col := range map[string]arrow.Array{"nil buffers": nilBufs} {
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, 0)
		for _, text := range []string{"k = 'a'", "k < 'a'", "k in ('a', 'b')", "k like 'a%'"} {
			e, err := CompileFilter(text, schema)
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("%s, %s: panic %v", name, text, p)
					}
				}()
				if _, err := e.Eval(rec); err != nil {
					t.Errorf("%s, %s: %v", name, text, err)
				}
			}()
		}
	}
}
