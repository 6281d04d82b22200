package exec

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// Floats read as a person writes them (12 significant digits) and a
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
	for _, v := range []string{"7846.36\n", "0.3\n"} {
		if !strings.Contains(out.String(), v) {
			t.Errorf("no %q in\n%s", v, out.String())
		}
	}
}

func TestFormatFloat(t *testing.T) {
	for f, want := range map[float64]string{
		7846.3599999999915: "7846.36", 1e20: "1e+20", 1.5e-9: "1.5e-09", -2.25: "-2.25", 123456789012: "123456789012", 0: "0",
	} {
		if got := formatFloat(f); got != want {
			t.Errorf("formatFloat(%v) = %q, want %q", f, got, want)
		}
	}
	if got := typeName(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}); got != "string" {
		t.Errorf("dictionary of strings shows as %q", got)
	}
}
