package exec

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// Floats read exactly, or shortened visibly, and a
// table wider than the terminal keeps the columns that fit and names
// the others.
func TestShowFitsWidthAndRoundsFloats(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, kvSchema, []any{"a", 1, 7846.3599999999915}, []any{"b", 2, 0.1 + 0.2})
	defer b.Release()
	var out bytes.Buffer
	if err := Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, b), Stages: []Stage{ShowTable(&out, ShowOptions{Width: 15})}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"k           n\n" +
		"string  int64\n" +
		"------  -----\n" +
		"a           1\n" +
		"b           2\n" +
		"(2 rows)\n" +
		"(1 more columns than fit the width: x; choose some with select)\n"
	if out.String() != want {
		t.Fatalf("width 15:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	if err := Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, b), Stages: []Stage{Show(&out, 0)}}, Options{Open: testOpen, Mem: mem}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"7846.36…\n", "0.3\n"} {
		if !strings.Contains(out.String(), v) {
			t.Errorf("no %q in\n%s", v, out.String())
		}
	}
}

func TestFormatFloat(t *testing.T) {
	for f, want := range map[float64]string{
		7846.3599999999915: "7846.36…", 1e20: "1e+20", 1.5e-9: "1.5e-09", -2.25: "-2.25", 123456789012: "123456789012", 0: "0",
		12345678901234: "12345678901234", -1234.5678: "-1234.5678", 1e15 + 0.5: "1e+15…",
	} {
		if got := formatFloat(f); got != want {
			t.Errorf("formatFloat(%v) = %q, want %q", f, got, want)
		}
	}
	tenth, fifth := 0.1, 0.2
	if got := formatFloat(tenth + fifth); got != "0.3…" { // 0.30000000000000004
		t.Errorf("0.1+0.2 shows as %q", got)
	}
	if got := formatFloatBits(float64(float32(16777216)), 32); got != "16777216" {
		t.Errorf("float32 16777216 shows as %q", got)
	}
	if got := typeName(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}); got != "string" {
		t.Errorf("dictionary of strings shows as %q", got)
	}
}

// Every type shows what it holds: decimals with their scale, binary as
// DuckDB shows a BLOB, control characters escaped so a row keeps its line.
func TestShowEveryTypeExactly(t *testing.T) {
	mem := checkedMem(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 4, Scale: 2}, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "k", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	bld.Field(0).(*array.Decimal128Builder).AppendValues([]decimal128.Num{decimal128.FromI64(100), decimal128.FromI64(-5)}, nil)
	bld.Field(1).(*array.BinaryBuilder).AppendValues([][]byte{{0, 'a', 0xff, '\\'}, []byte("ok")}, nil)
	bld.Field(2).(*array.StringBuilder).AppendValues([]string{"one\ttwo\nthree", "bell\a"}, nil)
	kb := bld.Field(3).(*array.BinaryDictionaryBuilder)
	if err := kb.AppendString("x\ry"); err != nil {
		t.Fatal(err)
	}
	kb.AppendNull()
	rec := bld.NewRecordBatch()
	defer rec.Release()
	var out bytes.Buffer
	if err := Run(context.Background(), Pipeline{Source: FromBatches(schema, rec), Stages: []Stage{Show(&out, 0)}}, Options{Mem: mem}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 7 {
		t.Fatalf("want 2 rows on their own lines:\n%s", out.String())
	}
	for i, want := range [][]string{{"1.00", `\x00a\xFF\x5C`, `one\ttwo\nthree`, `x\ry`}, {"-0.05", "ok", `bell\x07`, "null"}} {
		if got := strings.Fields(lines[3+i]); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("row %d: %q, want %q", i, got, want)
		}
	}
}

// OutputTo shows a table of the first 100 rows on a terminal, and writes
// Arrow IPC elsewhere.
func TestOutputTo(t *testing.T) {
	mem := checkedMem(t)
	rows := make([][]any, 101)
	for i := range rows {
		rows[i] = []any{"a", i, 0.5}
	}
	b := batch(t, mem, kvSchema, rows...)
	defer b.Release()
	run := func(width int) []byte {
		t.Helper()
		var out bytes.Buffer
		if err := Run(context.Background(), Pipeline{Source: FromBatches(kvSchema, b), Stages: []Stage{OutputTo(&out, width)}}, Options{Open: testOpen, Mem: mem}); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	if table := string(run(40)); !strings.HasPrefix(table, "k ") || !strings.HasSuffix(table, "(101 rows, first 100 shown)\n") {
		t.Errorf("on a terminal 40 wide:\n%s", table)
	}
	r, err := ipc.NewReader(bytes.NewReader(run(0)))
	if err != nil {
		t.Fatalf("not a terminal: not an Arrow IPC stream: %v", err)
	}
	defer r.Release()
	if !r.Next() || r.RecordBatch().NumRows() != 101 || !r.Schema().Equal(kvSchema) {
		t.Errorf("the stream does not hold the batch: %v", r.Err())
	}
}
