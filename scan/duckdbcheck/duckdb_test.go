//go:build duckdb_arrow

package duckdbcheck

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// duckdbRefuses lists the files DuckDB (1.5, as duckdb-go links it)
// cannot read, with why. The test fails when DuckDB refuses a file not
// listed or reads one that is, so the list stays true.
var duckdbRefuses = map[string]string{
	"bad_data/ARROW-GH-41317.parquet":                                              "its GeoParquet metadata names no geometry types",
	"bad_data/ARROW-GH-41321.parquet":                                              "its GeoParquet metadata names no geometry types",
	"bad_data/ARROW-GH-47662.parquet":                                              "a required column holds nulls (out of buffer)",
	"bad_data/ARROW-RS-GH-6229-DICTHEADER.parquet":                                 "a dictionary page header with a negative count",
	"bad_data/PARQUET-1481.parquet":                                                "a corrupt schema",
	"data/_KEY_MATERIAL_FOR_external_key_material_java.parquet.encrypted.json":     "not a Parquet file",
	"data/aes256/encrypt_columns_and_footer.parquet.encrypted":                     "encrypted, and no key is given",
	"data/aes256/encrypt_columns_and_footer_ctr.parquet.encrypted":                 "encrypted, and no key is given",
	"data/aes256/encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted": "encrypted, and no key is given",
	"data/aes256/encrypt_columns_plaintext_footer.parquet.encrypted":               "encrypted, and no key is given",
	"data/aes256/uniform_encryption.parquet.encrypted":                             "encrypted, and no key is given",
	"data/encrypt_columns_and_footer.parquet.encrypted":                            "encrypted, and no key is given",
	"data/encrypt_columns_and_footer_aad.parquet.encrypted":                        "encrypted, and no key is given",
	"data/encrypt_columns_and_footer_bloom_filter.parquet.encrypted":               "encrypted, and no key is given",
	"data/encrypt_columns_and_footer_ctr.parquet.encrypted":                        "encrypted, and no key is given",
	"data/encrypt_columns_and_footer_disable_aad_storage.parquet.encrypted":        "encrypted, and no key is given",
	"data/encrypt_columns_plaintext_footer.parquet.encrypted":                      "encrypted, and no key is given",
	"data/external_key_material_java.parquet.encrypted":                            "encrypted, and no key is given",
	"data/uniform_encryption.parquet.encrypted":                                    "encrypted, and no key is given",
	"data/byte_stream_split_extended.gzip.parquet":                                 "BYTE_STREAM_SPLIT of other types than FLOAT and DOUBLE",
	"data/hadoop_lz4_compressed.parquet":                                           "the LZ4 codec (Hadoop's framing): only LZ4_RAW",
	"data/hadoop_lz4_compressed_larger.parquet":                                    "the LZ4 codec (Hadoop's framing): only LZ4_RAW",
	"data/non_hadoop_lz4_compressed.parquet":                                       "the LZ4 codec (one bare LZ4 block): only LZ4_RAW",
	"data/map_no_value.parquet":                                                    "a MAP whose key_value group has no value",
}

// sluiceMisses lists the files DuckDB reads that scan refuses or reads
// with other values, with why. The goal is that it is empty; the test
// fails when a listed file reads the same, so it only shrinks.
var sluiceMisses = map[string]string{}

// twins are, for files DuckDB refuses, files it reads that hold the same
// values (as Arrow C++'s tests of them say): scan's read of the file is
// compared with DuckDB's of the twin.
var twins = map[string]string{
	"data/hadoop_lz4_compressed.parquet":        "data/lz4_raw_compressed.parquet",
	"data/hadoop_lz4_compressed_larger.parquet": "data/lz4_raw_compressed_larger.parquet",
	"data/non_hadoop_lz4_compressed.parquet":    "data/lz4_raw_compressed.parquet",
}

// duckdbWrong lists rows DuckDB reads wrong, by their numbers in the
// file (a SQL list), with why; they are left out of the comparison, and
// the test fails when DuckDB reads them as scan does.
var duckdbWrong = map[string]struct{ rows, why string }{
	// int96_from_spark.md: 9089380393200000000 µs, 290000-12-30 23:00
	// (scan's TestBeyondArrowGo checks it); DuckDB's conversion to
	// microseconds overflows into 226414 BC.
	"data/int96_from_spark.parquet": {"5", "a date past DuckDB's INT96 range"},
}

// scanOptions are the options a file needs to be read as DuckDB reads
// it (the why is in the comment).
var scanOptions = map[string]scan.Options{
	// Dates past 2262, which nanoseconds (arrow-go's unit, the default)
	// cannot hold; the default's error names the option.
	"data/int96_from_spark.parquet": {Int96Unit: "us"},
}

// rowColumn is the column the scan side adds: each row's place in the
// file, to line it up with DuckDB's file_row_number.
const rowColumn = "__sluice_row"

// TestAgainstDuckDB reads every file of parquet-testing (data and
// bad_data) with DuckDB and with scan and compares them value by value:
// each column's values are turned into DuckDB's text of them (scan's
// Arrow batches reach DuckDB through its Arrow interface, cast to the
// type DuckDB reads the file's column as) and hashed with the row's
// number, so a value in the wrong row counts as wrong. Where the sums
// differ, the first rows that differ are shown.
func TestAgainstDuckDB(t *testing.T) {
	root := arrowtest.ParquetTesting(t)
	var files []string
	for _, dir := range []string{"data", "bad_data"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, e os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !e.IsDir() && strings.Contains(e.Name(), ".parquet") {
				rel, _ := filepath.Rel(root, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(files)
	known := map[string]bool{}
	for _, f := range files {
		known[f] = true
	}
	for _, list := range []map[string]string{duckdbRefuses, sluiceMisses} {
		for f := range list {
			if !known[f] {
				t.Errorf("%s is listed but not in parquet-testing", f)
			}
		}
	}

	d := openDuckDB(t)
	var same, refused, corrupt []string
	for _, name := range files {
		t.Run(name, func(t *testing.T) {
			switch d.compare(t, root, name) {
			case "same":
				same = append(same, name)
			case "refused":
				refused = append(refused, name)
			case "refused by scan":
				corrupt = append(corrupt, name)
			}
		})
	}
	t.Logf("DuckDB reads %d of %d files; scan reads %d of them with the same values and refuses %d corrupt by design",
		len(files)-len(refused), len(files), len(same), len(corrupt))
}

type duck struct {
	db    *sql.DB
	conn  *sql.Conn
	arrow *duckdb.Arrow
	views int
}

func openDuckDB(t *testing.T) *duck {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	d := &duck{db: db, conn: conn}
	err = conn.Raw(func(dc any) error {
		d.arrow, err = duckdb.NewArrowFromConn(dc.(driver.Conn))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Timestamps with a time zone print in UTC on both sides; the
	// machine is small and shared.
	for _, q := range []string{"SET TimeZone = 'UTC'", "SET threads = 2"} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return d
}

// column is one column as DuckDB sees it.
type column struct{ name, typ string }

// compare reads one file both ways and reports "same", "refused" (by
// DuckDB) or "" (a failure or a listed miss, already reported).
func (d *duck) compare(t *testing.T, root, name string) string {
	ctx := context.Background()
	path := filepath.Join(root, filepath.FromSlash(name))
	source := fmt.Sprintf("read_parquet(%s, file_row_number = true)", quoteString(path))

	wrong := duckdbWrong[name]
	cols, want, err := d.read(ctx, source, wrong.rows)
	if why, listed := duckdbRefuses[name]; err != nil || listed {
		twin, hasTwin := twins[name]
		switch {
		case err != nil && listed && hasTwin:
			t.Logf("DuckDB refuses it (%s); compared with DuckDB's read of %s, which holds the same values", why, twin)
			source = fmt.Sprintf("read_parquet(%s, file_row_number = true)", quoteString(filepath.Join(root, filepath.FromSlash(twin))))
			if cols, want, err = d.read(ctx, source, ""); err != nil {
				t.Fatalf("DuckDB refuses %s: %v", twin, oneLine(err))
			}
		case err != nil && listed:
			t.Logf("DuckDB refuses it (%s): %v", why, oneLine(err))
			return "refused"
		case err != nil:
			t.Errorf("DuckDB refuses it and duckdbRefuses does not say why: %v", oneLine(err))
			return ""
		default:
			t.Errorf("DuckDB reads it: take it off duckdbRefuses (%s)", why)
			return ""
		}
	}

	miss := func(format string, args ...any) string {
		msg := fmt.Sprintf(format, args...)
		if why, ok := sluiceMisses[name]; ok {
			t.Logf("a known miss (%s): %s", why, msg)
		} else {
			t.Errorf("%s", msg)
		}
		return ""
	}
	// A file made corrupt on purpose may be refused, whatever DuckDB
	// makes of it; what scan does read must still agree.
	refuse := func(err error) string {
		if strings.HasPrefix(name, "bad_data/") && !strings.Contains(err.Error(), "\n") {
			t.Logf("corrupt by design, and scan refuses it: %v", err)
			return "refused by scan"
		}
		return miss("DuckDB reads it, scan fails: %v", err)
	}
	mem := arrowtest.LeakChecked(t)
	opts := scanOptions[name]
	opts.Mem = mem
	opts.Ordered = true
	ds, err := openScan(ctx, path, opts)
	if err != nil {
		return refuse(err)
	}
	if got, want := fieldNames(ds.Schema()), columnNames(cols); got != want {
		return miss("scan reads columns %s, DuckDB %s", got, want)
	}
	view, rr, release, err := d.register(ctx, ds, mem)
	if err != nil {
		t.Fatalf("registering scan's batches with DuckDB: %v", err)
	}
	scols, err := d.describe(ctx, "SELECT * FROM "+view)
	if err != nil {
		release()
		t.Fatalf("DuckDB cannot take scan's batches: %v", err)
	}
	scols = scols[:len(scols)-1] // rowColumn
	dexprs, sexprs := make([]string, len(cols)), make([]string, len(cols))
	renormal := false
	for i := range cols {
		var note string
		dexprs[i], sexprs[i], note = comparable(cols[i], scols[i])
		switch {
		case sexprs[i] == "":
			release()
			return miss("column %s: scan reads %s (DuckDB's %s), DuckDB reads %s", cols[i].name, ds.Schema().Field(i).Type, scols[i].typ, cols[i].typ)
		case note != "":
			t.Logf("column %s: %s", cols[i].name, note)
		}
		renormal = renormal || dexprs[i] != asText(quoteName(cols[i].name))
	}
	got, err := d.sums(ctx, view, rowColumn, sexprs, wrong.rows)
	release()
	if rr.err != nil {
		return refuse(rr.err)
	}
	if err != nil {
		t.Fatalf("DuckDB cannot compare scan's values: %v", oneLine(err))
	}
	if renormal {
		if want, err = d.sums(ctx, source, "file_row_number", dexprs, wrong.rows); err != nil {
			t.Fatalf("DuckDB cannot compare its values: %v", oneLine(err))
		}
	}
	if got[0] != want[0] {
		return miss("scan reads %s rows, DuckDB %s", got[0], want[0])
	}
	if wrong.rows != "" {
		if slices.Equal(got[1+len(cols):], want[1+len(cols):]) {
			t.Errorf("DuckDB reads rows %s as scan does: take them off duckdbWrong (%s)", wrong.rows, wrong.why)
		} else {
			t.Logf("rows %s left out: DuckDB reads them wrong (%s)", wrong.rows, wrong.why)
		}
	}
	for i, c := range cols {
		if got[i+1] != want[i+1] {
			return miss("column %s (%s) differs: %s", c.name, c.typ, d.firstDiff(ctx, ds, mem, source, dexprs[i], sexprs[i], wrong.rows))
		}
	}
	if _, listed := sluiceMisses[name]; listed {
		t.Errorf("scan reads it as DuckDB does: take it off sluiceMisses")
		return ""
	}
	return "same"
}

// comparable returns DuckDB's text of a column as DuckDB reads the file
// (d) and as scan's batches reach DuckDB (s), each an expression over its
// own source, made comparable where the two types differ in ways that
// keep every value; s is "" where they differ otherwise. The note says
// what was made comparable.
func comparable(d, s column) (dexpr, sexpr, note string) {
	dn, sn := quoteName(d.name), quoteName(s.name)
	switch {
	case d.typ == s.typ:
		return asText(dn), asText(sn), ""
	case strings.ReplaceAll(s.typ, "TIMESTAMP WITH TIME ZONE", "TIMESTAMP") == d.typ:
		// arrow-go labels instants UTC where DuckDB leaves them bare
		// (INT96, and timestamps inside structs); the session's zone is
		// UTC, so the cast keeps every value.
		return asText(dn), asText(fmt.Sprintf("CAST(%s AS %s)", sn, d.typ)),
			fmt.Sprintf("scan's %s compared as DuckDB's %s", s.typ, d.typ)
	case strings.HasPrefix(d.typ, "GEOMETRY") && s.typ == "BLOB":
		// DuckDB decodes Parquet's GEOMETRY/GEOGRAPHY (and GeoParquet)
		// columns; scan gives their WKB bytes, as arrow-go does.
		return asText("ST_AsWKB(" + dn + ")"), asText(sn), "DuckDB's GEOMETRY compared as its WKB"
	case strings.HasPrefix(d.typ, "MAP(") && strings.HasPrefix(s.typ, `STRUCT("key" `) && strings.HasSuffix(s.typ, "[]"):
		// A map whose keys may be null (incorrect_map_schema.parquet)
		// cannot be an Arrow map: scan gives its key/value pairs.
		return asText(fmt.Sprintf("CAST(map_entries(%s) AS %s)", dn, s.typ)), asText(sn),
			fmt.Sprintf("DuckDB's %s compared as its entries", d.typ)
	}
	return "", "", ""
}

func asText(e string) string { return fmt.Sprintf("CAST(%s AS VARCHAR)", e) }

// read describes a file as DuckDB reads it and sums its columns' text
// (see sums).
func (d *duck) read(ctx context.Context, source, leftOut string) ([]column, []string, error) {
	cols, err := d.describe(ctx, "SELECT * FROM "+source)
	if err != nil {
		return nil, nil, err
	}
	cols = cols[:len(cols)-1] // file_row_number
	plain := make([]string, len(cols))
	for i, c := range cols {
		plain[i] = asText(quoteName(c.name))
	}
	sums, err := d.sums(ctx, source, "file_row_number", plain, leftOut)
	return cols, sums, err
}

// sums returns, over a source, the count of rows not in leftOut (a SQL
// list of row numbers) and, for each expression, the sum of the hashes
// of (row, value) over those rows, then over the rows left out.
func (d *duck) sums(ctx context.Context, source, row string, exprs []string, leftOut string) ([]string, error) {
	kept, out := "true", "false"
	if leftOut != "" {
		kept = fmt.Sprintf("%s NOT IN (%s)", quoteName(row), leftOut)
		out = fmt.Sprintf("%s IN (%s)", quoteName(row), leftOut)
	}
	sel := []string{fmt.Sprintf("(count(*) FILTER (WHERE %s))::VARCHAR", kept)}
	for _, where := range []string{kept, out} {
		for _, e := range exprs {
			sel = append(sel, fmt.Sprintf("(sum(hash(%s, %s)) FILTER (WHERE %s))::VARCHAR", quoteName(row), e, where))
		}
	}
	vals := make([]sql.NullString, len(sel))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := d.conn.QueryRowContext(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+source).Scan(ptrs...); err != nil {
		return nil, err
	}
	res := make([]string, len(vals))
	for i, v := range vals {
		res[i] = v.String
		if !v.Valid {
			res[i] = "(null)"
		}
	}
	return res, nil
}

// firstDiff scans the file again and shows the first rows where the two
// expressions differ.
func (d *duck) firstDiff(ctx context.Context, ds *scan.Dataset, mem memory.Allocator, source, dexpr, sexpr, leftOut string) string {
	view, rr, release, err := d.register(ctx, ds, mem)
	if err != nil {
		return err.Error()
	}
	defer release()
	q := fmt.Sprintf(`WITH a AS (SELECT file_row_number AS r, %s AS v FROM %s),
b AS (SELECT %s AS r, %s AS v FROM %s)
SELECT coalesce(a.r, b.r), a.v, b.v FROM a FULL JOIN b ON a.r = b.r
WHERE (a.v IS DISTINCT FROM b.v OR a.r IS NULL OR b.r IS NULL) AND coalesce(a.r, b.r) NOT IN (%s) ORDER BY 1 LIMIT 3`,
		dexpr, source, quoteName(rowColumn), sexpr, view, cmp.Or(leftOut, "-1"))
	rows, err := d.conn.QueryContext(ctx, q)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r int64
		var a, b sql.NullString
		if err := rows.Scan(&r, &a, &b); err != nil {
			return err.Error()
		}
		out = append(out, fmt.Sprintf("row %d: DuckDB %s, scan %s", r, shown(a), shown(b)))
	}
	if err := rows.Err(); err != nil {
		return err.Error()
	}
	if rr.err != nil {
		out = append(out, rr.err.Error())
	}
	return strings.Join(out, "; ")
}

func shown(s sql.NullString) string {
	if !s.Valid {
		return "null"
	}
	if len(s.String) > 120 {
		return fmt.Sprintf("%q… (%d bytes)", s.String[:120], len(s.String))
	}
	return fmt.Sprintf("%q", s.String)
}

func (d *duck) describe(ctx context.Context, q string) ([]column, error) {
	rows, err := d.conn.QueryContext(ctx, "DESCRIBE "+q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var cols []column
	for rows.Next() {
		vals := make([]sql.NullString, len(names))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		cols = append(cols, column{name: vals[0].String, typ: vals[1].String})
	}
	return cols, rows.Err()
}

// register hands DuckDB a scan of the dataset as a view: the batches in
// dataset order, each with its rows' numbers added. Two things are
// changed on the way, neither a value: DuckDB takes no Arrow float16, so
// those columns go as float32 (which holds every float16 exactly, and is
// what DuckDB reads Parquet's FLOAT16 as); and fields go without their
// metadata, where an Arrow extension name the file's own Arrow schema
// gives (unknown-logical-type.parquet claims geoarrow.wkb for strings)
// would make DuckDB decode the bytes as that type.
func (d *duck) register(ctx context.Context, ds *scan.Dataset, mem memory.Allocator) (string, *scanReader, func(), error) {
	d.views++
	name := fmt.Sprintf("sluice_scan_%d", d.views)
	var fields []arrow.Field
	for _, f := range ds.Schema().Fields() {
		if f.Type.ID() == arrow.FLOAT16 {
			f.Type = arrow.PrimitiveTypes.Float32
		}
		fields = append(fields, arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable})
	}
	fields = append(fields, arrow.Field{Name: rowColumn, Type: arrow.PrimitiveTypes.Int64})
	rr := &scanReader{s: ds.Scan(ctx), schema: arrow.NewSchema(fields, nil), mem: mem}
	rr.refs.Store(1)
	release, err := d.arrow.RegisterView(rr, name)
	// The exported stream holds its own reference (and RegisterView
	// releases it on failure): the stream's release closes the scan,
	// waiting for its workers, before the test checks its allocator.
	rr.Release()
	if err != nil {
		return "", nil, nil, err
	}
	return name, rr, func() {
		release()
		// DuckDB keeps the view's name; a later file registers another.
		d.conn.ExecContext(context.Background(), "DROP VIEW IF EXISTS "+name)
	}, nil
}

// scanReader is an array.RecordReader over a scan, adding each row's
// number as a last column.
type scanReader struct {
	s      *scan.Scanner
	schema *arrow.Schema
	mem    memory.Allocator
	cur    arrow.RecordBatch
	row    int64
	err    error
	refs   atomic.Int64
}

func (r *scanReader) Retain() { r.refs.Add(1) }

func (r *scanReader) Release() {
	if r.refs.Add(-1) == 0 {
		if r.cur != nil {
			r.cur.Release()
			r.cur = nil
		}
		r.s.Close()
	}
}

func (r *scanReader) Schema() *arrow.Schema { return r.schema }

func (r *scanReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if !r.s.Next() {
		r.err = r.s.Err()
		return false
	}
	b := r.s.Batch()
	n := b.NumRows()
	rb := array.NewInt64Builder(r.mem)
	rb.Reserve(int(n))
	for i := range n {
		rb.UnsafeAppend(r.row + i)
	}
	rows := rb.NewArray()
	rb.Release()
	r.row += n
	cols := make([]arrow.Array, 0, b.NumCols()+1)
	for _, c := range b.Columns() {
		if h, ok := c.(*array.Float16); ok {
			c = float32Of(r.mem, h)
			defer c.Release()
		}
		cols = append(cols, c)
	}
	r.cur = array.NewRecordBatch(r.schema, append(cols, rows), n)
	rows.Release()
	b.Release()
	return true
}

func float32Of(mem memory.Allocator, h *array.Float16) arrow.Array {
	b := array.NewFloat32Builder(mem)
	defer b.Release()
	b.Reserve(h.Len())
	for i := range h.Len() {
		if h.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(h.Value(i).Float32())
		}
	}
	return b.NewArray()
}

func (r *scanReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch, for the interface.
func (r *scanReader) Record() arrow.RecordBatch { return r.cur }

func (r *scanReader) Err() error { return r.err }

func openScan(ctx context.Context, path string, opts scan.Options) (*scan.Dataset, error) {
	dir := filepath.Dir(path)
	drv, err := store.NewFileDriver(dir)
	if err != nil {
		return nil, err
	}
	st := store.New(drv, "file://"+filepath.ToSlash(dir)+"/")
	return scan.Open(ctx, st, filepath.Base(path), opts)
}

func fieldNames(sc *arrow.Schema) string {
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func columnNames(cols []column) string {
	var names []string
	for _, c := range cols {
		names = append(names, c.name)
	}
	return "[" + strings.Join(names, ", ") + "]"
}

func quoteName(s string) string   { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
