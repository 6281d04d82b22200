package expr_test

import (
	"fmt"
	"log"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/expr"
)

// Compile a filter against a schema and evaluate it over a batch; a
// mistake is found before any data is read, with its position.
func ExampleCompileFilter() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "city", Type: arrow.BinaryTypes.String},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"Oslo", "Lima", "Pune", "Nuuk"}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{4.5, 19, 31.5, 0}, []bool{true, true, true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()

	f, err := expr.CompileFilter("temp > 10 and city like 'P%' or city in ('Oslo')", schema)
	if err != nil {
		log.Fatal(err)
	}
	v, err := f.Eval(rec)
	if err != nil {
		log.Fatal(err)
	}
	for i := range int(rec.NumRows()) {
		// A comparison with null (Nuuk's temperature) does not hold.
		fmt.Println(rec.Column(0).ValueStr(i), v.IsValid(i) && v.B[i])
	}

	_, err = expr.CompileFilter("temp > 'warm'", schema)
	fmt.Println(err)
	// Output:
	// Oslo true
	// Lima false
	// Pune true
	// Nuuk false
	// at position 6 of "temp > 'warm'": cannot compare a float with a string
}

// Compute a column: evaluate an expression over a batch and store its
// value as an Arrow array, nulls kept (what select and extend do).
func ExampleArray() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "city", Type: arrow.BinaryTypes.String},
		{Name: "temp", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"Oslo", "Lima", "Nuuk"}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{4.5, 19, 0}, []bool{true, true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()

	e, err := expr.Compile("upper(substring(city, 1, 3)) || ': ' || case when temp > 10 then 'warm' else 'cold' end", schema)
	if err != nil {
		log.Fatal(err)
	}
	v, err := e.Eval(rec)
	if err != nil {
		log.Fatal(err)
	}
	a := expr.Array(memory.DefaultAllocator, v, int(rec.NumRows()))
	defer a.Release()
	fmt.Println(a.DataType(), a)
	// Output:
	// utf8 ["OSL: cold" "LIM: warm" "NUU: cold"]
}
