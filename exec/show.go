package exec

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Show is a sink that prints the stream as a table for a person: a
// header, up to maxRows rows (all when maxRows <= 0), and the row count.
// It reads the whole stream either way.
func Show(w io.Writer, maxRows int) Stage { return &showStage{w: w, max: maxRows} }

type showStage struct {
	w   io.Writer
	max int
}

func (s *showStage) Name() string { return "show" }
func (s *showStage) isSink()      {}

func (s *showStage) bind(e *env, in *arrow.Schema) (*plan, error) {
	return &plan{name: "show", newOp: func(operator) (operator, error) {
		return &showOp{w: s.w, max: s.max, schema: in}, nil
	}}, nil
}

type showOp struct {
	w      io.Writer
	max    int
	schema *arrow.Schema
	rows   [][]string
	total  int64
}

// maxCell is the widest a cell is printed; longer values are cut.
const maxCell = 48

func (o *showOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	o.total += int64(n)
	for i := 0; i < n && (o.max <= 0 || len(o.rows) < o.max); i++ {
		row := make([]string, rec.NumCols())
		for c, col := range rec.Columns() {
			row[c] = formatCell(col, i)
		}
		o.rows = append(o.rows, row)
	}
	return nil
}

func formatCell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "null"
	}
	var s string
	switch a := a.(type) {
	case *array.Float64:
		s = formatFloat(a.Value(i))
	case *array.Float32:
		s = strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		s = a.Value(i).ToTime(unit).UTC().Format("2006-01-02 15:04:05.999999999")
	case *array.Date32:
		s = a.Value(i).ToTime().Format(time.DateOnly)
	default:
		s = a.ValueStr(i)
	}
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if utf8.RuneCountInString(s) > maxCell {
		s = string([]rune(s)[:maxCell-1]) + "…"
	}
	return s
}

// formatFloat prints a float exactly but without an exponent for the
// sizes people read.
func formatFloat(f float64) string {
	if a := max(f, -f); a != 0 && (a >= 1e15 || a < 1e-6) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func (o *showOp) finish(ctx context.Context) error {
	cols := o.schema.NumFields()
	width := make([]int, cols)
	right := make([]bool, cols)
	for c, f := range o.schema.Fields() {
		width[c] = utf8.RuneCountInString(f.Name)
		switch f.Type.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.DECIMAL256:
			right[c] = true
		}
	}
	for _, r := range o.rows {
		for c, v := range r {
			width[c] = max(width[c], utf8.RuneCountInString(v))
		}
	}
	bw := bufio.NewWriter(o.w)
	line := func(cells []string) {
		for c, v := range cells {
			if c > 0 {
				bw.WriteString("  ")
			}
			pad := strings.Repeat(" ", width[c]-utf8.RuneCountInString(v))
			if right[c] {
				bw.WriteString(pad + v)
			} else if c == len(cells)-1 {
				bw.WriteString(v)
			} else {
				bw.WriteString(v + pad)
			}
		}
		bw.WriteByte('\n')
	}
	line(fieldNames(o.schema))
	rule := make([]string, cols)
	for c := range rule {
		rule[c] = strings.Repeat("-", width[c])
	}
	line(rule)
	for _, r := range o.rows {
		line(r)
	}
	switch {
	case int64(len(o.rows)) < o.total:
		fmt.Fprintf(bw, "(%d rows, first %d shown)\n", o.total, len(o.rows))
	case o.total == 1:
		fmt.Fprintln(bw, "(1 row)")
	default:
		fmt.Fprintf(bw, "(%d rows)\n", o.total)
	}
	return bw.Flush()
}

func (o *showOp) release() {}
