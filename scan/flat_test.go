package scan

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/store"
)

// flatRecord has a column of each kind the flat path decodes, nullable
// and not, with runs (RLE) and varied values (bit-packed indices).
func flatRecord(rows int) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "flag", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "mode", Type: arrow.BinaryTypes.String},
	}, nil)
	return testRows(sc, rows,
		func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i*7919) % 1000) },
		func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(i) * 1_000_003) },
		func(b array.Builder, i int) { b.(*array.Float32Builder).Append(float32(i%50) / 4) },
		func(b array.Builder, i int) { b.(*array.Float64Builder).Append(float64(i) * 1.5) },
		func(b array.Builder, i int) { b.(*array.Date32Builder).Append(arrow.Date32(9000 + i%2500)) },
		func(b array.Builder, i int) { b.(*array.StringBuilder).Append(string(rune('A' + (i/300)%3))) },
		mode,
	)
}

// testRows is a record of rows rows of sc, column f's value at row i
// set by vals[f]; its nullable columns are null in scattered rows and in
// runs of them.
func testRows(sc *arrow.Schema, rows int, vals ...func(b array.Builder, i int)) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	defer b.Release()
	for i := range rows {
		null := i%7 == 3 || (i/500)%4 == 1
		for f, v := range vals {
			if null && sc.Field(f).Nullable {
				b.Field(f).AppendNull()
			} else {
				v(b.Field(f), i)
			}
		}
	}
	return b.NewRecordBatch()
}

// mode is a string column of few values, never null.
func mode(b array.Builder, i int) {
	modes := []string{"AIR", "MAIL", "SHIP", "TRUCK", "RAIL", "FOB", "REG AIR"}
	b.(*array.StringBuilder).Append(modes[(i*i)%len(modes)])
}

// TestFlatDecode: row groups of flat columns, decoded by the flat path,
// give what arrow-go's own reader gives, in every layout a writer makes
// of them: dictionary or PLAIN pages, data pages v1 and v2, pages small
// enough that a batch spans many, with each column alone and all at
// once; and the flat path is what decoded them.
func TestFlatDecode(t *testing.T) {
	rec := flatRecord(9000)
	defer rec.Release()
	eachLayout(t, rec, nil, func(t *testing.T, dict bool, data []byte, st *store.Store) {
		readDict := []string{"flag", "mode"}
		for _, cols := range [][]string{nil, {"i32"}, {"mode", "day"}, {"flag"}} {
			want := reference(t, [][]byte{data}, cols, nil)
			for _, batch := range []int{1000, 333, 7} {
				opts := Options{Mem: checked(t), Columns: cols, BatchRows: batch, Concurrency: 2}
				// Strings read as strings decode flat from any
				// pages; as dictionaries, from dictionary pages.
				if dict && batch != 7 {
					// Strings read as dictionaries decode flat only
					// from dictionary-encoded pages.
					opts.ReadDict = keepRead(readDict, cols)
				}
				got, flat := scanFlat(t, st, "t/", opts)
				if got.String() != want.String() {
					t.Fatalf("columns %v, batches of %d:\nscan:     %v\narrow-go: %v", cols, batch, got, want)
				}
				if flat != 3 {
					t.Errorf("columns %v: %d of 3 row groups decoded flat", cols, flat)
				}
			}
		}
	})
}

// eachLayout writes rec as Parquet in each layout a writer makes of it
// (dictionary or PLAIN pages, data pages v1 and v2; row groups of 4000
// rows, pages small enough that a batch spans many; and the writer
// properties more), puts the file in a store of its own as t/a.parquet,
// and runs f on it in a subtest.
func eachLayout(t *testing.T, rec arrow.RecordBatch, more []parquet.WriterProperty, f func(t *testing.T, dict bool, data []byte, st *store.Store)) {
	for _, dict := range []bool{true, false} {
		for _, version := range []parquet.DataPageVersion{parquet.DataPageV1, parquet.DataPageV2} {
			t.Run(fmt.Sprintf("dict=%v/v2=%v", dict, version == parquet.DataPageV2), func(t *testing.T) {
				props := append([]parquet.WriterProperty{parquet.WithMaxRowGroupLength(4000),
					parquet.WithDictionaryDefault(dict), parquet.WithDataPageSize(700), parquet.WithDataPageVersion(version)}, more...)
				data := arrowtest.Parquet(t, rec, parquet.NewWriterProperties(props...))
				st := memStore(t.Name())
				if _, err := st.Put(context.Background(), "t/a.parquet", bytes.NewReader(data), store.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
				f(t, dict, data, st)
			})
		}
	}
}

// keepRead is the names among cols (all of them for nil cols).
func keepRead(names, cols []string) []string {
	if cols == nil {
		return names
	}
	var out []string
	for _, n := range names {
		for _, c := range cols {
			if n == c {
				out = append(out, n)
			}
		}
	}
	return out
}

// scanFlat scans pattern whole: its checksums and how many row groups
// the flat path decoded.
func scanFlat(t *testing.T, st *store.Store, pattern string, opts Options) (sums, int64) {
	t.Helper()
	ds, err := Open(context.Background(), st, pattern, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	sum, _ := collect(t, s)
	return sum, s.c.flatGroups.Load()
}

// TestFlatStringLengths: strings of every length from 0 to 80, across the
// 16, 32 and 64 bytes up to which values are copied a fixed width at a time,
// in every layout, read as arrow-go reads them; the last values of a
// page are short of the bytes a fixed copy reads past them.
func TestFlatStringLengths(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rec := testRows(sc, 6000, func(b array.Builder, i int) {
		v := make([]byte, (i*7)%81)
		for j := range v {
			v[j] = byte('a' + (i+j)%26)
		}
		b.(*array.StringBuilder).Append(string(v))
	})
	defer rec.Release()
	eachLayout(t, rec, nil, func(t *testing.T, dict bool, data []byte, st *store.Store) {
		want := reference(t, [][]byte{data}, nil, nil)
		for _, batch := range []int{1000, 7} {
			got, flat := scanFlat(t, st, "t/", Options{Mem: checked(t), BatchRows: batch})
			if got.String() != want.String() {
				t.Fatalf("batches of %d:\nscan:     %v\narrow-go: %v", batch, got, want)
			}
			if flat != 2 {
				t.Errorf("%d of 2 row groups decoded flat", flat)
			}
		}
	})
}

// TestHybrid decodes RLE / bit-packed hybrid runs a writer made.
func TestHybrid(t *testing.T) {
	// width 3: an RLE run of 5 x 4, then one bit-packed group of 0..7
	data := []byte{5 << 1, 4, 1<<1 | 1}
	var packed uint64
	for v := range 8 {
		packed |= uint64(v) << (3 * v)
	}
	data = append(data, byte(packed), byte(packed>>8), byte(packed>>16))
	h := hybrid{data: data, width: 3}
	got := make([]uint32, 13)
	if !h.decode(got[:2]) || !h.decode(got[2:9]) || !h.decode(got[9:]) {
		t.Fatal("decode failed")
	}
	want := []uint32{4, 4, 4, 4, 4, 0, 1, 2, 3, 4, 5, 6, 7}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if h.decode(got[:1]) {
		t.Fatal("decoded past the end")
	}
}

// FuzzHybrid: any bytes decode or fail, never panic, and never give a
// value wider than the width.
func FuzzHybrid(f *testing.F) {
	f.Add([]byte{5 << 1, 4, 1<<1 | 1, 0x88, 0xc6, 0xfa}, uint8(3), uint16(13))
	f.Add([]byte{3, 0xff}, uint8(1), uint16(8))
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x10}, uint8(32), uint16(100))
	f.Fuzz(func(t *testing.T, data []byte, width uint8, n uint16) {
		if width > 32 {
			return
		}
		h := hybrid{data: data, width: uint(width)}
		out := make([]uint32, int(n)%4096)
		ok := h.decode(out)
		if ok && width < 32 {
			for _, v := range out {
				if v>>width != 0 {
					t.Fatalf("value %d wider than %d bits", v, width)
				}
			}
		}
		// The same values decoded a few at a time, stopping inside runs
		// and groups of 8: the same result.
		h = hybrid{data: data, width: uint(width)}
		parts := make([]uint32, len(out))
		partsOK := true
		for at, step := 0, 1; at < len(parts) && partsOK; step = step%13 + 1 {
			k := min(step, len(parts)-at)
			partsOK = h.decode(parts[at : at+k])
			at += k
		}
		if ok != partsOK || ok && !slices.Equal(out, parts) {
			t.Fatalf("at once (%v): %v\nin parts (%v): %v", ok, out, partsOK, parts)
		}
	})
}

// mixedRecord has flat columns between columns the flat path leaves to
// arrow-go (a list, booleans, strings read as strings), nullable and
// not.
func mixedRecord(rows int) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "i64", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "mode", Type: arrow.BinaryTypes.String},
	}, nil)
	return testRows(sc, rows,
		func(b array.Builder, i int) { b.(*array.Int32Builder).Append(int32(i*7919) % 1000) },
		func(b array.Builder, i int) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			for j := range i % 4 {
				lb.ValueBuilder().(*array.Int32Builder).Append(int32(i + j))
			}
		},
		func(b array.Builder, i int) { b.(*array.Int64Builder).Append(int64(i) * 1_000_003) },
		func(b array.Builder, i int) { b.(*array.BooleanBuilder).Append(i%3 == 0) },
		func(b array.Builder, i int) { b.(*array.Float64Builder).Append(float64(i) * 1.5) },
		func(b array.Builder, i int) { b.(*array.StringBuilder).Append(fmt.Sprintf("note %d", i*31%977)) },
		mode,
	)
}

// TestFlatMixed: in a row group of flat columns and others, the flat
// ones decode flat and arrow-go the others, and the batches are what
// arrow-go alone gives, cut at the same rows.
func TestFlatMixed(t *testing.T) {
	rec := mixedRecord(9000)
	defer rec.Release()
	// A small dictionary limit: the writer gives up on note's dictionary
	// part way through a chunk and writes the rest PLAIN.
	small := []parquet.WriterProperty{parquet.WithDictionaryPageSizeLimit(3000)}
	eachLayout(t, rec, small, func(t *testing.T, dict bool, data []byte, st *store.Store) {
		if dict && !fellBack(t, data, "note") {
			t.Fatal("no chunk of note has both dictionary and PLAIN data pages")
		}
		for _, tc := range []struct {
			cols []string
			flat int64 // flat column chunks of each row group
		}{
			{nil, 5}, // but mode read as a dictionary from PLAIN pages
			{[]string{"tags", "i64"}, 1},
			{[]string{"f64", "note", "i32", "ok"}, 3},
		} {
			want := reference(t, [][]byte{data}, tc.cols, nil)
			for _, batch := range []int{1000, 333} {
				for _, readDict := range []bool{false, true} {
					opts := Options{Mem: checked(t), Columns: tc.cols, BatchRows: batch, Concurrency: 2}
					flat := tc.flat
					if readDict {
						opts.ReadDict = keepRead([]string{"mode"}, tc.cols)
						if !dict && len(opts.ReadDict) > 0 {
							flat--
						}
					}
					ds, err := Open(context.Background(), st, "t/", opts)
					if err != nil {
						t.Fatal(err)
					}
					s := ds.Scan(context.Background())
					got, pos := collect(t, s)
					s.Close()
					if got.String() != want.String() {
						t.Fatalf("columns %v, batches of %d, dict %v:\nscan:     %v\narrow-go: %v", tc.cols, batch, readDict, got, want)
					}
					for _, p := range pos {
						if p.Row != int64(p.Batch*batch) {
							t.Fatalf("columns %v: batch %d of row group %d starts at row %d, not %d", tc.cols, p.Batch, p.RowGroup, p.Row, p.Batch*batch)
						}
					}
					if n := s.c.flatChunks.Load(); n != 3*flat {
						t.Errorf("columns %v, dict %v: %d flat column chunks, want %d", tc.cols, readDict, n, 3*flat)
					}
					if n := s.c.flatGroups.Load(); n != 0 {
						t.Errorf("columns %v: %d row groups wholly flat", tc.cols, n)
					}
				}
			}
		}
	})
}

// fellBack says whether some chunk of column name has dictionary-encoded
// data pages and PLAIN ones.
func fellBack(t *testing.T, data []byte, name string) bool {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	md := pf.MetaData()
	leaf := md.Schema.ColumnIndexByName(name)
	for rg := range md.NumRowGroups() {
		cc, err := md.RowGroup(rg).ColumnChunk(leaf)
		if err != nil {
			t.Fatal(err)
		}
		var dictPages, plainPages bool
		for _, s := range cc.EncodingStats() {
			switch {
			case s.PageType == file.PageTypeDictionaryPage:
			case s.Encoding == parquet.Encodings.Plain:
				plainPages = true
			default:
				dictPages = true
			}
		}
		if dictPages && plainPages {
			return true
		}
	}
	return false
}

// FuzzFlatBytes: any page bytes (definition levels, PLAIN values or
// dictionary indices, a dictionary) decode as byte arrays (Arrow does
// not check UTF-8 here, nor does arrow-go on read) or fail, never
// panic, and a decoded array is valid and holds all it allocated.
func FuzzFlatBytes(f *testing.F) {
	plain := []byte{3, 0, 0, 0, 'a', 'b', 'c', 0, 0, 0, 0, 1, 0, 0, 0, 'z'}
	dict := []byte{2, 0, 0, 0, 'h', 'i', 1, 0, 0, 0, '!'}
	f.Add([]byte{3 << 1, 1}, plain, dict, uint8(2), uint16(3), false)
	f.Add([]byte{1<<1 | 1, 0x5b}, []byte{1, 4<<1 | 1, 0x21}, dict, uint8(2), uint16(8), true)
	f.Add([]byte{}, []byte{1, 8 << 1, 1}, dict, uint8(2), uint16(8), true)
	f.Fuzz(func(t *testing.T, defs, vals, dictData []byte, ndict uint8, n uint16, isDict bool) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		rows := int(n) % 2048
		c := &flatColumn{kind: flatBytes, typ: arrow.BinaryTypes.Binary, maxDef: 1, mem: mem, name: "s", dictLen: -1,
			scratch: &flatScratch{}, left: rows, defs: hybrid{data: defs, width: 1}}
		if len(defs) == 0 {
			c.maxDef = 0
		}
		if err := c.bytesDict(int(ndict), dictData); err != nil {
			return
		}
		enc := parquet.Encodings.Plain
		if isDict {
			enc = parquet.Encodings.RLEDict
		}
		if err := c.startValues(enc, rows, vals); err != nil {
			return
		}
		a, err := c.read(rows)
		if err != nil {
			return
		}
		defer a.Release()
		if err := a.(*array.Binary).ValidateFull(); err != nil {
			t.Fatalf("invalid array: %v", err)
		}
	})
}
