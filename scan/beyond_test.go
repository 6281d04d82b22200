package scan

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluice-data/sluice/internal/arrowtest"
)

// beyondArrowGo lists the parquet-testing files that arrow-go (v18.8)
// refuses or misreads on its own and DuckDB reads, with what they hold
// as the files' own documentation (data/README.md and the .md beside
// each file) says: each column's type and its values as arrow formats
// them.
var beyondArrowGo = []struct {
	file    string
	opts    Options
	columns []string // "name: type = values"
}{
	// old_list_structure.md: LIST<LIST<INT32>>, the single value [[1, 2], [3, 4]].
	{file: "old_list_structure.parquet", columns: []string{"a: list<array: list<item: int32, nullable>> = [[[1 2] [3 4]]]"}},
	// README: "a single row, value is null".
	{file: "datapage_v2_empty_datapage.snappy.parquet", columns: []string{"value: float32 = [(null)]"}},
	// README: "MAP(STRING, INT32)" written by Presto with optional keys:
	// MAP(ARRAY['name','parent'], ARRAY['report','another']). An Arrow
	// map's keys cannot be null, so it reads as the key/value pairs, in
	// the order Presto stored them.
	{file: "incorrect_map_schema.parquet", columns: []string{
		`my_map: list<key_value: struct<key: utf8 nullable, value: utf8 nullable>, nullable> = [{["parent" "name"] ["another" "report"]}]`}},
	// README: a column whose logical type id is one no reader knows yet;
	// a reader reads its physical type (BYTE_ARRAY), as DuckDB does.
	{file: "unknown-logical-type.parquet", columns: []string{
		`column with known type: utf8 = ["known string 1" "known string 2" "known string 3"]`,
		`column with unknown type: binary = ["unknown string 1" "unknown string 2" "unknown string 3"]`}},
	// int96_from_spark.md: microseconds since the epoch 1704141296123456,
	// 1704070800000000, 253402225200000000, 1735599600000000, null,
	// 9089380393200000000 (the last two beyond nanoseconds' 2262).
	{file: "int96_from_spark.parquet", opts: Options{Int96Unit: "us"}, columns: []string{
		"a: timestamp[us, tz=UTC] = [1704141296123456 1704070800000000 253402225200000000 1735599600000000 (null) 9089380393200000000]"}},
}

// lz4Twins pairs each file of the deprecated LZ4 codec, which arrow-go
// cannot read and DuckDB refuses, with the file of the same values in
// LZ4_RAW, which both read: c0, c1 and v11 over 4 rows, or 10000 UUID
// strings in a, as Arrow C++'s tests of these files say.
var lz4Twins = map[string]string{
	"hadoop_lz4_compressed.parquet":        "lz4_raw_compressed.parquet",        // Hadoop's frames (parquet-mr)
	"hadoop_lz4_compressed_larger.parquet": "lz4_raw_compressed_larger.parquet", // several frames a page
	"non_hadoop_lz4_compressed.parquet":    "lz4_raw_compressed.parquet",        // one bare block (old parquet-cpp)
}

// TestLZ4: each LZ4 file reads as its LZ4_RAW twin does in arrow-go,
// whole and column by column.
func TestLZ4(t *testing.T) {
	root := arrowtest.ParquetTesting(t)
	for file, twin := range lz4Twins {
		t.Run(file, func(t *testing.T) {
			want, err := arrowGoRead(filepath.Join(root, "data", twin))
			if err != nil {
				t.Fatal(err)
			}
			defer want.Release()
			path := filepath.Join(root, "data", file)
			got, _, err := scanFile(t, path, Options{Mem: checked(t), BatchRows: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if w := sumOf(want); got.String() != w.String() || got.rows == 0 {
				t.Fatalf("scan:    %v\narrow-go: %v (%s)", got, w, twin)
			}
		})
	}
}

func TestBeyondArrowGo(t *testing.T) {
	root := arrowtest.ParquetTesting(t)
	for _, c := range beyondArrowGo {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(root, "data", c.file)
			opts := c.opts
			opts.Mem = checked(t)
			got := readColumns(t, path, opts)
			if strings.Join(got, "\n") != strings.Join(c.columns, "\n") {
				t.Fatalf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.columns, "\n"))
			}
		})
	}
}

// TestInt96Hint: read in nanoseconds, as arrow-go does, a date past 2262
// fails with one line that says how to read it.
func TestInt96Hint(t *testing.T) {
	path := filepath.Join(arrowtest.ParquetTesting(t), "data", "int96_from_spark.parquet")
	_, _, err := scanFile(t, path, Options{Mem: checked(t)})
	if err == nil || !strings.Contains(err.Error(), "--int96-unit us") {
		t.Fatalf("want an error suggesting --int96-unit, got %v", err)
	}
	checkCleanError(t, err, path)
}

// readColumns scans a file whole and formats each column as
// "name: type = values".
func readColumns(t *testing.T, path string, opts Options) []string {
	t.Helper()
	ds, bs, _, err := scanLocal(t, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseBatches(bs)
	var out []string
	for i, f := range ds.Schema().Fields() {
		var vals []string
		for _, b := range bs {
			if b.NumRows() > 0 {
				v := b.Column(i).String()
				vals = append(vals, v[1:len(v)-1])
			}
		}
		out = append(out, f.Name+": "+typeString(f.Type)+" = ["+strings.Join(vals, " ")+"]")
	}
	return out
}

func typeString(t arrow.DataType) string { return t.String() }

// FuzzRewriteLegacy feeds the footer rewrite arbitrary bytes (seeded with
// the footers of the files it exists for): it returns an error or bytes,
// never panics, and what it returns parses as the input did or better.
func FuzzRewriteLegacy(f *testing.F) {
	root := filepath.Join("..", "..", "shared", "testdata", "parquet-testing", "data")
	for _, c := range beyondArrowGo {
		b, err := os.ReadFile(filepath.Join(root, c.file))
		if err != nil || len(b) < 12 {
			continue
		}
		n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		if n+8 <= len(b) {
			f.Add(b[len(b)-8-n : len(b)-8])
		}
	}
	f.Add([]byte{0x15, 0x02, 0x19, 0x1c, 0x00})
	f.Fuzz(func(t *testing.T, meta []byte) {
		out, changed, err := rewriteLegacy(meta)
		if err != nil {
			return
		}
		if !changed && string(out) != string(meta) {
			t.Fatal("unchanged rewrite returned other bytes")
		}
		if changed {
			_, _ = parseRaw(out) // must not panic (parseRaw recovers) nor hang
		}
	})
}

// TestLargeStringMap reads large_string_map.brotli.parquet, whose one
// row group holds two rows of map<string, int32>, each the one pair
// ("a" repeated 2^30 times, 1) (data/README.md): two 1 GiB pages, whose
// strings together pass what one Arrow string array addresses. arrow-go
// alone refuses a page over 256 MiB; scan reads it, a row a batch.
func TestLargeStringMap(t *testing.T) {
	path := filepath.Join(arrowtest.ParquetTesting(t), "data", "large_string_map.brotli.parquet")
	mem := checked(t)
	ds, err := Open(context.Background(), storeFor(t, path), filepath.Base(path), Options{Mem: mem, Ordered: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ds.Schema().String(), "schema:\n  fields: 1\n    - arr: type=map<utf8, int32, items_nullable>, nullable"; !strings.HasPrefix(got, want) {
		t.Fatalf("schema %s, want %s", got, want)
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	rows := 0
	for s.Next() {
		b := s.Batch()
		m := b.Column(0).(*array.Map)
		for i := 0; i < m.Len(); i++ {
			start, end := m.ValueOffsets(i)
			keys, items := m.Keys().(*array.String), m.Items().(*array.Int32)
			if end-start != 1 || m.IsNull(i) {
				t.Fatalf("row %d: %d pairs, want 1", rows, end-start)
			}
			k := keys.Value(int(start))
			if len(k) != 1<<30 || strings.Trim(k, "a") != "" || items.Value(int(start)) != 1 {
				t.Fatalf("row %d: a key of %d bytes (%.8q…), value %d; want \"a\" × 2^30, 1", rows, len(k), k, items.Value(int(start)))
			}
			rows++
		}
		b.Release()
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Fatalf("%d rows, want 2", rows)
	}
}
