package format_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/format"
)

// wide has a column of each kind the parallel writer encodes itself:
// required and optional, with no, some and only nulls, dictionaries,
// strings, and the types arrow-go converts on the way (decimal, bool,
// timestamps).
var wide = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "price", Type: &arrow.Decimal128Type{Precision: 15, Scale: 2}, Nullable: true},
	{Name: "flag", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}, Nullable: true},
	{Name: "comment", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "at", Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "big", Type: arrow.BinaryTypes.LargeString},
}, nil)

// wideBatches are batches of the sizes given; batch b's nulls depend on
// b: none, some, or (for "x") all of a batch.
func wideBatches(mem memory.Allocator, sizes ...int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "beta", "gamma", "delta", "a rather longer comment that does not repeat much"}
	var out []arrow.RecordBatch
	id := int64(0)
	for b, n := range sizes {
		rb := array.NewRecordBuilder(mem, wide)
		for range n {
			null := b%3 == 1 && rng.IntN(5) == 0
			rb.Field(0).(*array.Int64Builder).Append(id)
			if null {
				rb.Field(1).AppendNull()
				rb.Field(2).AppendNull()
				rb.Field(3).AppendNull()
				rb.Field(4).AppendNull()
				rb.Field(6).AppendNull()
				rb.Field(7).AppendNull()
			} else {
				rb.Field(1).(*array.Int32Builder).Append(int32(rng.IntN(50)))
				rb.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int64N(1e9)))
				_ = rb.Field(3).(*array.BinaryDictionaryBuilder).AppendString([]string{"A", "N", "R"}[rng.IntN(3)])
				rb.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("%s %d", words[rng.IntN(len(words))], rng.IntN(1e6)))
				rb.Field(6).(*array.Date32Builder).Append(arrow.Date32(8000 + rng.IntN(2500)))
				rb.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(rng.Int64N(1e15)))
			}
			rb.Field(5).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
			if b%3 == 2 {
				rb.Field(8).AppendNull()
			} else {
				rb.Field(8).(*array.Float64Builder).Append(rng.Float64())
			}
			rb.Field(9).(*array.LargeStringBuilder).Append(words[int(id)%len(words)])
			id++
		}
		out = append(out, rb.NewRecordBatch())
		rb.Release()
	}
	return out
}

func writeParquet(t *testing.T, mem memory.Allocator, recs []arrow.RecordBatch, o format.Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := format.NewWriterOptions(&buf, format.Parquet, recs[0].Schema(), mem, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			w.Abort()
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// TestParquetColumnsInParallel: encoding the columns of a row group on
// goroutines of their own writes exactly the bytes of arrow-go's own
// buffered writer (one goroutine), for every compression, across row
// groups that end inside batches, with empty batches among them.
func TestParquetColumnsInParallel(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	recs := wideBatches(mem, 1000, 0, 3000, 2500, 1, 5000, 700, 4096)
	defer release(recs)
	for _, c := range format.Compressions {
		t.Run(c, func(t *testing.T) {
			serial := writeParquet(t, mem, recs, format.Options{Compression: c, RowGroupRows: 4096, Encoders: 1})
			for _, enc := range []int{0, 2, 5} {
				par := writeParquet(t, mem, recs, format.Options{Compression: c, RowGroupRows: 4096, Encoders: enc})
				if !bytes.Equal(serial, par) {
					t.Fatalf("encoders %d: %d bytes differ from arrow-go's own writer's %d", enc, len(par), len(serial))
				}
			}
			pf, err := file.NewParquetReader(bytes.NewReader(serial))
			if err != nil {
				t.Fatal(err)
			}
			defer pf.Close()
			if got, want := pf.NumRowGroups(), 4; got != want { // 16297 rows, 4096 a group
				t.Errorf("%d row groups, want %d", got, want)
			}
			cc, err := pf.MetaData().RowGroup(0).ColumnChunk(0)
			if err != nil {
				t.Fatal(err)
			}
			if got := cc.Compression().String(); (c == "none") != (got == "UNCOMPRESSED") {
				t.Errorf("compression %s wrote %s", c, got)
			}
		})
	}
}

// TestParquetRowGroupBytes: a row group ends once the Arrow bytes given
// to it reach RowGroupBytes, and the rows read back are the rows written.
func TestParquetRowGroupBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	recs := wideBatches(mem, 2000, 2000, 2000, 2000)
	defer release(recs)
	one := writeParquet(t, mem, recs, format.Options{})
	split := writeParquet(t, mem, recs, format.Options{RowGroupBytes: 1})
	groups := func(b []byte) int {
		pf, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		return pf.NumRowGroups()
	}
	if g := groups(one); g != 1 {
		t.Errorf("without a byte limit: %d row groups, want 1", g)
	}
	if g := groups(split); g != 4 {
		t.Errorf("RowGroupBytes 1: %d row groups, want one a batch (4)", g)
	}
	if a, b := readRows(t, one), readRows(t, split); a != b {
		t.Error("the two files read back differently")
	}
}

// TestParquetDictPageBytes: a column whose distinct values outgrow
// DictPageBytes falls back to plain encoding within the row group (its
// encoder stops growing the hash table of values seen), while by default
// the same column stays dictionary-encoded; the rows read back alike.
func TestParquetDictPageBytes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	recs := wideBatches(mem, 4000, 4000) // "id": 8000 distinct int64s, 64000 bytes
	defer release(recs)
	// plainPages says whether any data page of id is plain-encoded.
	plainPages := func(b []byte) (plain bool) {
		pf, err := file.NewParquetReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer pf.Close()
		cc, err := pf.MetaData().RowGroup(0).ColumnChunk(0)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range cc.EncodingStats() {
			if st.Encoding == parquet.Encodings.Plain && fmt.Sprint(st.PageType) != "DICTIONARY_PAGE" {
				plain = true
			}
		}
		return plain
	}
	def := writeParquet(t, mem, recs, format.Options{})
	small := writeParquet(t, mem, recs, format.Options{DictPageBytes: 16 << 10})
	if plainPages(def) {
		t.Error("by default id fell back to plain encoding below arrow-go's 1 MiB dictionary")
	}
	if !plainPages(small) {
		t.Error("DictPageBytes 16 KiB: id kept its dictionary past 2000 values")
	}
	if a, b := readRows(t, def), readRows(t, small); a != b {
		t.Error("the two files read back differently")
	}
}

// readRows is a file's rows as JSON lines, read by arrow-go's reader.
func readRows(t *testing.T, b []byte) string {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 12}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	var out bytes.Buffer
	w, err := format.NewWriter(&out, format.JSONLines, tbl.Schema(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := array.NewTableReader(tbl, 1<<12)
	defer tr.Release()
	for tr.Next() {
		if err := w.Write(tr.RecordBatch()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestParquetAbortWithQueuedColumns: Abort with batches still queued for
// the encoders stops them (goleak checks) and frees everything.
func TestParquetAbortWithQueuedColumns(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	recs := wideBatches(mem, 3000, 3000, 3000, 3000, 3000)
	defer release(recs)
	for _, rg := range []int64{0, 4000} {
		var buf bytes.Buffer
		w, err := format.NewWriterOptions(&buf, format.Parquet, wide, mem, format.Options{RowGroupRows: rg})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		w.Abort()
	}
}

// TestParquetNested: a schema with a nested column is written by
// arrow-go's own writer and reads back.
func TestParquetNested(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	s := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	rb := array.NewRecordBuilder(mem, s)
	lb := rb.Field(1).(*array.ListBuilder)
	for i := range 10 {
		rb.Field(0).(*array.Int64Builder).Append(int64(i))
		lb.Append(true)
		lb.ValueBuilder().(*array.Int32Builder).AppendValues([]int32{int32(i), int32(i * 2)}, nil)
	}
	rec := rb.NewRecordBatch()
	rb.Release()
	defer rec.Release()
	b := writeParquet(t, mem, []arrow.RecordBatch{rec}, format.Options{})
	if got := readRows(t, b); !bytes.Contains([]byte(got), []byte(`{"id":9,"l":[9,18]}`)) {
		t.Errorf("read back %s", got)
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, o := range []format.Options{{Compression: "lzo"}, {RowGroupRows: -1}} {
		if _, err := format.NewWriterOptions(&bytes.Buffer{}, format.Parquet, wide, nil, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
