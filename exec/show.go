package exec

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Show is a sink that prints the stream as a table for a person: a
// header, up to maxRows rows (all when maxRows <= 0), and the row count.
// It reads the whole stream either way, and keeps copies of the cells it
// prints, never views of a batch's buffers.
func Show(w io.Writer, maxRows int) Stage { return ShowTable(w, ShowOptions{MaxRows: maxRows}) }

// OutputTo is how a pipeline that ends in no sink writes its stream to
// w (Env.Output): as a table of at most 100 rows when w is a terminal
// width columns wide (width > 0), where binary Arrow IPC would be
// garbage, else as an Arrow IPC stream for the next stage to read.
func OutputTo(w io.Writer, width int) Stage {
	if width > 0 {
		return ShowTable(w, ShowOptions{MaxRows: 100, Width: width})
	}
	return WriteIPC(w)
}

// ShowOptions shape the table Show prints.
type ShowOptions struct {
	// MaxRows is the most rows printed; <= 0 means all.
	MaxRows int
	// Width is the widest a line may be (a terminal's width): columns
	// that do not fit are left out and named below the table. Zero
	// means no limit.
	Width int
}

// ShowTable is Show with every option: the header, each column's type,
// the rows, and the row count.
func ShowTable(w io.Writer, opts ShowOptions) Stage {
	return &showStage{w: w, max: opts.MaxRows, width: opts.Width}
}

type showStage struct {
	w     io.Writer
	max   int
	width int
}

func (s *showStage) Name() string { return "show" }
func (s *showStage) isSink()      {}

func (s *showStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	return &bound{name: "show", newOp: func(operator) (operator, error) {
		return &showOp{w: s.w, max: s.max, width: s.width, schema: in}, nil
	}}, nil
}

type showOp struct {
	w      io.Writer
	max    int
	width  int
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
		s = formatFloatBits(float64(a.Value(i)), 32)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		s = a.Value(i).ToTime(unit).UTC().Format("2006-01-02 15:04:05.999999999")
	case *array.Date32:
		s = a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Decimal128:
		s = a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Decimal256:
		s = a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale)
	case *array.Binary:
		s = blob(a.Value(i))
	case *array.LargeBinary:
		s = blob(a.Value(i))
	case *array.FixedSizeBinary:
		s = blob(a.Value(i))
	case *array.Dictionary:
		return formatCell(a.Dictionary(), a.GetValueIndex(i))
	default:
		s = escapeControl(a.ValueStr(i))
	}
	if utf8.RuneCountInString(s) > maxCell {
		s = string([]rune(s)[:maxCell-1]) + "…"
	}
	// A string or dictionary value is a view of the batch's buffer, which
	// is reused once the batch is released, while the row is kept until
	// the table is printed.
	return strings.Clone(s)
}

// escapeControl writes control characters as C and DuckDB do (\n, \t,
// \r, else \xHH), so that a value keeps its one line and shows what it
// holds.
func escapeControl(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsControl(r) && r < 0x100:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// blob prints binary as DuckDB shows a BLOB: printable ASCII as it is,
// every other byte (and the backslash) as \xHH.
func blob(v []byte) string {
	var b strings.Builder
	for _, c := range v {
		if c >= 0x20 && c < 0x7f && c != '\\' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, `\x%02X`, c)
		}
	}
	return b.String()
}

// formatFloat prints a float exactly (its shortest form that reads back
// to the same bits) when that takes at most 15 significant digits, and
// otherwise rounded to 12 and marked as shortened with "…": a sum that
// is 7846.3599999999915 to the last bit reads 7846.36…, and a number
// never looks exact when it is not. Exponents only for the sizes people
// do not write out.
func formatFloat(f float64) string { return formatFloatBits(f, 64) }

func formatFloatBits(f float64, bits int) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	plain := func(v float64, prec int) string {
		if a := math.Abs(v); a != 0 && (a >= 1e15 || a < 1e-6) {
			return strconv.FormatFloat(v, 'g', prec, bits)
		}
		return strconv.FormatFloat(v, 'f', -1, bits)
	}
	mant := strconv.FormatFloat(math.Abs(f), 'e', -1, bits) // d.ddd…e±x
	mant = mant[:strings.IndexByte(mant, 'e')]
	if len(strings.Replace(mant, ".", "", 1)) <= 15 {
		return plain(f, -1)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 12, 64), 64)
	return plain(r, -1) + "…"
}

// typeName is a column's type as the table shows it: a dictionary column
// by its values' type, since the encoding is not what a person reads.
func typeName(dt arrow.DataType) string {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		dt = d.ValueType
	}
	switch dt.ID() {
	case arrow.STRING:
		return "string" // pyarrow's name; Arrow's own is utf8
	case arrow.LARGE_STRING:
		return "large_string"
	}
	return dt.String()
}

func (o *showOp) finish(ctx context.Context) error {
	cols := o.schema.NumFields()
	width := make([]int, cols)
	right := make([]bool, cols)
	types := make([]string, cols)
	for c, f := range o.schema.Fields() {
		types[c] = typeName(f.Type)
		width[c] = max(utf8.RuneCountInString(f.Name), utf8.RuneCountInString(types[c]))
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
	// The leading columns that fit the width; the rest are named below.
	shown, used := cols, 0
	if o.width > 0 {
		for c := range cols {
			if used += width[c] + 2*min(c, 1); used > o.width && c > 0 {
				shown = c
				break
			}
		}
	}
	bw := bufio.NewWriter(o.w)
	line := func(cells []string) {
		cells = cells[:min(len(cells), shown)]
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
	line(types)
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
	if shown < cols {
		hidden := fieldNames(o.schema)[shown:]
		list := strings.Join(hidden, ", ")
		if o.width > 0 && utf8.RuneCountInString(list) > 2*o.width {
			list = string([]rune(list)[:2*o.width]) + "…"
		}
		fmt.Fprintf(bw, "(%d more columns than fit the width: %s; choose some with select)\n", len(hidden), list)
	}
	return bw.Flush()
}

func (o *showOp) release() {}
