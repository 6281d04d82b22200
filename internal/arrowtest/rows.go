package arrowtest

import (
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ExactRows prints each row of rec as its values joined by "|", floats
// in hexadecimal, so that equal text is equal bits.
func ExactRows(rec arrow.RecordBatch) []string {
	var rows []string
	for i := range int(rec.NumRows()) {
		var cells []string
		for _, c := range rec.Columns() {
			if f, ok := c.(*array.Float64); ok && f.IsValid(i) {
				cells = append(cells, strconv.FormatFloat(f.Value(i), 'x', -1, 64))
				continue
			}
			cells = append(cells, c.ValueStr(i))
		}
		rows = append(rows, strings.Join(cells, "|"))
	}
	return rows
}
