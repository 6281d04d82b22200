package exec_test

import (
	"context"
	"log"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/format"
)

// Run a pipeline over batches already in memory: filter, aggregate by a
// key, keep the largest, print as CSV. The same stages read Parquet with
// exec.Scan and write any format with exec.Write.
func ExampleRun() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "city", Type: arrow.BinaryTypes.String},
		{Name: "sales", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	batch := func(cities []string, sales []float64) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).(*array.StringBuilder).AppendValues(cities, nil)
		b.Field(1).(*array.Float64Builder).AppendValues(sales, nil)
		return b.NewRecordBatch()
	}
	r1 := batch([]string{"Oslo", "Lima", "Oslo"}, []float64{10, 2.5, 7})
	r2 := batch([]string{"Pune", "Lima", "Pune"}, []float64{30, 4, 0.5})
	defer r1.Release()
	defer r2.Release()

	f, err := exec.Filter("sales >= 1")
	if err != nil {
		log.Fatal(err)
	}
	p := exec.Pipeline{
		Source: exec.FromBatches(schema, r1, r2),
		Stages: []exec.Stage{
			f,
			exec.SumBy([]string{"city"}, []string{"sales"}),
			exec.Top(2, []exec.SortKey{{Column: "sales", Desc: true}}),
			exec.ToCSV(os.Stdout),
		},
	}
	if err := exec.Run(context.Background(), p, exec.Options{}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// city,sales
	// Pune,30
	// Oslo,17
}

// Run a program of one's own as a stage: here awk, over CSV, keeps the
// rows of a large sale and doubles it; its output is read back as CSV,
// its columns' types inferred, and the stages after it go on from there.
func ExampleProgram() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "city", Type: arrow.BinaryTypes.String},
		{Name: "sales", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"Oslo", "Lima", "Pune"}, nil)
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{10, 2.5, 30}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()

	awk := exec.Program(exec.ProgramOptions{
		Argv: []string{"awk", "-F,", "-v", "OFS=,", `NR == 1 { print; next } $2 > 5 { print $1, $2 * 2 }`},
		In:   format.CSV,
		Out:  format.CSV,
	})
	p := exec.Pipeline{
		Source: exec.FromBatches(schema, rec),
		Stages: []exec.Stage{awk, exec.SumBy([]string{"city"}, []string{"sales"}), exec.ToCSV(os.Stdout)},
	}
	if err := exec.Run(context.Background(), p, exec.Options{}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// city,sales
	// Oslo,20
	// Pune,60
}
