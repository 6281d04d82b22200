package format_test

import (
	"bytes"
	"fmt"
	"log"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/format"
)

// Choose a format from a destination's name, write a batch in it, and
// tell a format back from its first bytes, as sluice's readers do.
func ExampleNewWriter() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"ada", ""}, []bool{true, false})
	rec := b.NewRecordBatch()
	defer rec.Release()

	write := func(dest string) []byte {
		f, err := format.Choose(dest, "")
		if err != nil {
			log.Fatal(err)
		}
		var buf bytes.Buffer
		w, err := format.NewWriter(&buf, f, schema, nil)
		if err != nil {
			log.Fatal(err)
		}
		if err := w.Write(rec); err != nil {
			w.Abort()
			log.Fatal(err)
		}
		if err := w.Close(); err != nil { // the output is complete only now
			log.Fatal(err)
		}
		fmt.Printf("%s: %s, %d rows\n", dest, f.Name(), w.Rows())
		return buf.Bytes()
	}
	os.Stdout.Write(write("out.csv"))
	os.Stdout.Write(write("out.jsonl"))
	pq := write("out.parquet")
	fmt.Println("sniffed:", format.Sniff(pq, "no-suffix").Name())
	// Output:
	// out.csv: csv, 2 rows
	// id,name
	// 1,ada
	// 2,
	// out.jsonl: jsonl, 2 rows
	// {"id":1,"name":"ada"}
	// {"id":2,"name":null}
	// out.parquet: parquet, 2 rows
	// sniffed: parquet
}
