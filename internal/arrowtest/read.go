package arrowtest

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ReadBatches reads data written in the format of that name ("arrow",
// an IPC file, in its footer's order; "arrows", an IPC stream;
// "parquet") with arrow-go's own readers, independent of ours, and calls
// fn with each batch in turn; fn retains a batch it keeps. The name is a
// string, not a format.Format, so that format's own tests can use this.
func ReadBatches(t testing.TB, data []byte, format string, fn func(arrow.RecordBatch)) {
	t.Helper()
	switch format {
	case "arrow":
		r, err := ipc.NewFileReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		for i := range r.NumRecords() {
			rec, err := r.RecordBatch(i)
			if err != nil {
				t.Fatal(err)
			}
			fn(rec)
		}
	case "arrows":
		r, err := ipc.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Release()
		for r.Next() {
			fn(r.RecordBatch())
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
	case "parquet":
		pf, err := file.NewParquetReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer rr.Release()
		for rr.Next() {
			fn(rr.RecordBatch())
		}
		if err := rr.Err(); err != nil && err != io.EOF {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no reader for format %q", format)
	}
}

// ReadChecksum is the Checksum of what ReadBatches reads.
func ReadChecksum(t testing.TB, data []byte, format string) Checksum {
	t.Helper()
	var c Checksum
	ReadBatches(t, data, format, c.Add)
	return c
}
