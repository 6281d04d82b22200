package scan

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
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

func TestBeyondArrowGo(t *testing.T) {
	root := parquetTesting(t)
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
	path := filepath.Join(parquetTesting(t), "data", "int96_from_spark.parquet")
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
	st := storeFor(t, path)
	ds, err := Open(context.Background(), st, filepath.Base(path), opts)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Scan(context.Background())
	defer s.Close()
	var bs []Batch
	for s.Next() {
		bs = append(bs, s.Batch())
	}
	defer func() {
		for _, b := range bs {
			b.Release()
		}
	}()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	sortBatches(bs)
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
