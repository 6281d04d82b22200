package main

import (
	"bytes"
	"database/sql"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests check sluice against an independent engine: DuckDB runs
// the same queries in SQL over the same Parquet files, and the results
// must agree (floats within 1e-9 relative: the engines add in different
// orders). scripts/test runs them, so CI does.

var sluiceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-duckdb-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sluiceBin = filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", sluiceBin, "./cmd/sluice")
	// As the README installs it: without cgo.
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Dir = filepath.Join("..", "..", "..") // the sluice module
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build sluice: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func sluice(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(sluiceBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sluice %q: %v: %s", args, err, errb.String())
	}
	return out.String()
}

// sluiceCSV runs a pipeline ending in to-csv and returns its rows
// without the header.
func sluiceCSV(t *testing.T, pipeline string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(sluice(t, "run", pipeline+" | to-csv"))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no header", pipeline)
	}
	return rows[1:]
}

// pipedCSV runs a pipeline's stages as processes between pipes, each
// its own sluice command (scan writing Arrow to stdout, the last stage
// piped to to-csv), and returns the rows without the header.
func pipedCSV(t *testing.T, pipeline string) [][]string {
	t.Helper()
	return csvRows(t, piped(t, pipeline+" | to-csv"))
}

// piped runs a pipeline's stages as processes between pipes, each its
// own sluice command (scan writing Arrow to stdout), and returns the
// output. The stages are split at " | ", which the pipelines given here
// have only there.
func piped(t *testing.T, pipeline string) string {
	t.Helper()
	stages := strings.Split(pipeline, " | ")
	stages[0] += " -o -"
	for i := range stages {
		stages[i] = sluiceBin + " " + stages[i]
	}
	cmd := exec.Command("bash", "-o", "pipefail", "-c", strings.Join(stages, " | "))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v: %s", pipeline, err, errb.String())
	}
	return out.String()
}

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// duck runs a query and returns its rows as strings: "" for null, dates
// as YYYY-MM-DD.
func duck(t *testing.T, db *sql.DB, q string) [][]string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, q)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			switch v := v.(type) {
			case nil:
			case time.Time:
				row[i] = v.Format("2006-01-02")
			default:
				row[i] = fmt.Sprint(v)
			}
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// same says whether two cells agree: equal text, or numbers within 1e-9
// relative.
func same(a, b string) bool {
	if a == b {
		return true
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
}

func compare(t *testing.T, what string, got, want [][]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: sluice gave %d rows, DuckDB %d\nsluice %v\nduckdb %v", what, len(got), len(want), got, want)
		return
	}
	for i := range got {
		if len(got[i]) != len(want[i]) {
			t.Errorf("%s: row %d: sluice %v, DuckDB %v", what, i, got[i], want[i])
			continue
		}
		for j := range got[i] {
			if !same(got[i][j], want[i][j]) {
				t.Errorf("%s: row %d: sluice %v, DuckDB %v", what, i, got[i], want[i])
				break
			}
		}
	}
}

// TestQueriesAB: the pipeline benchmark's queries A (taxi: sum of trip
// distance by pickup date, top 9) and B (TPC-H Q1's shape over lineitem)
// give DuckDB's answers, over data sluice generates.
func TestQueriesAB(t *testing.T) {
	dir := t.TempDir()
	taxi, li := filepath.Join(dir, "taxi"), filepath.Join(dir, "lineitem")
	sluice(t, "gen", "taxi", "--rows", "200000", "--files", "2", "--out", taxi, "-q")
	sluice(t, "gen", "lineitem", "--rows", "200000", "--files", "2", "--out", li, "-q")
	db := openDB(t)

	// The stage texts of bench/pipeline's queries, ending in to-csv
	// instead of show.
	a := sluiceCSV(t, "scan "+taxi+" --columns pickup_date,trip_distance | sum-by pickup_date trip_distance | top 9 --by trip_distance --desc")
	compare(t, "query A", a, duck(t, db, fmt.Sprintf(queries["a"], filepath.Join(taxi, "*.parquet"))))

	b := sluiceCSV(t, "scan "+li+" --dict l_returnflag,l_linestatus --columns l_returnflag,l_linestatus,l_quantity,l_extendedprice,l_discount,l_tax,l_shipdate"+
		` | filter "l_shipdate <= date '1998-09-02'"`+
		` | agg-by l_returnflag,l_linestatus "sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price, `+
		`sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, `+
		`mean(l_quantity) as avg_qty, mean(l_extendedprice) as avg_price, mean(l_discount) as avg_disc, count() as count_order"`)
	compare(t, "query B", b, duck(t, db, fmt.Sprintf(queries["b"], filepath.Join(li, "*.parquet"))))
	if len(a) != 9 || len(b) < 3 {
		t.Errorf("query A gave %d rows, B %d: the data does not exercise them", len(a), len(b))
	}
}

// formsTable is exec's filter table (exec/filterforms_test.go,
// formsRowOf), written here by DuckDB: row i has id i, x i/10 (null when
// i%10 = 3), s one of a, bb, ccc, dd (null when i%7 = 0), d 1998-09-01
// plus i/10 days, ts 2020-01-01 plus i hours, flag i%2 = 0; row groups of
// 10 rows, so sluice's pruning by statistics is exercised too.
const formsTable = `COPY (
  SELECT i::BIGINT AS id,
    CASE WHEN i %% 10 = 3 THEN NULL ELSE i / 10 END::DOUBLE AS x,
    CASE WHEN i %% 7 = 0 THEN NULL ELSE ['a', 'bb', 'ccc', 'dd'][i %% 4 + 1] END AS s,
    DATE '1998-09-01' + (i // 10)::INTEGER AS d,
    TIMESTAMP '2020-01-01' + i * INTERVAL 1 HOUR AS ts,
    i %% 2 = 0 AS flag
  FROM range(100) t(i) ORDER BY i
) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 10)`

// TestFilterSemantics: every expression of exec's shared filter table
// (exec/testdata/filters.txt) keeps, in both of sluice's forms (scan
// --filter and the filter stage), the rows DuckDB's WHERE keeps: SQL's
// rules for nulls, dates and timestamps against string literals,
// intervals, in, between, like.
func TestFilterSemantics(t *testing.T) {
	db := openDB(t)
	file := filepath.Join(t.TempDir(), "forms.parquet")
	if _, err := db.Exec(fmt.Sprintf(formsTable, file)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "exec", "testdata", "filters.txt"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range strings.Split(string(b), "\n") {
		if e == "" || strings.HasPrefix(e, "#") {
			continue
		}
		n++
		want := duck(t, db, fmt.Sprintf("SELECT id FROM read_parquet('%s') WHERE %s ORDER BY id", file, e))
		compare(t, "scan --filter "+e, sluiceCSV(t, "scan "+file+` --filter "`+e+`" | select id`), want)
		compare(t, "filter "+e, sluiceCSV(t, "scan "+file+` | filter "`+e+`" | select id`), want)
	}
	if n < 10 {
		t.Fatalf("only %d expressions in filters.txt", n)
	}
}

// TestNullRules: aggregates skip nulls as SQL's do (count() counts rows,
// count(x) values; sum, mean, min and max of values only) and null keys
// form one group, last (SQL's default order).
func TestNullRules(t *testing.T) {
	db := openDB(t)
	file := filepath.Join(t.TempDir(), "forms.parquet")
	if _, err := db.Exec(fmt.Sprintf(formsTable, file)); err != nil {
		t.Fatal(err)
	}
	got := sluiceCSV(t, "scan "+file+` | agg-by s "sum(x) as sx, count() as n, count(x) as nx, mean(x) as mx, min(x) as lo, max(x) as hi"`)
	want := duck(t, db, fmt.Sprintf("SELECT s, sum(x), count(*), count(x), avg(x), min(x), max(x) FROM read_parquet('%s') GROUP BY s ORDER BY s NULLS LAST", file))
	compare(t, "agg-by s over nulls", got, want)
	// A group whose values are all null: sum and mean are null.
	got = sluiceCSV(t, "scan "+file+` | filter "x is null" | agg-by flag "sum(x) as sx, count(x) as nx, mean(x) as mx"`)
	want = duck(t, db, fmt.Sprintf("SELECT flag, sum(x), count(x), avg(x) FROM read_parquet('%s') WHERE x IS NULL GROUP BY flag ORDER BY flag", file))
	compare(t, "aggregates of nulls only", got, want)
}

// TestParquetWriteReadsBack is the write comparison's check: the same
// Arrow data (lineitem, all columns) written as Parquet with snappy by
// sluice (its parallel column encoders, small row groups so there are
// several) and by DuckDB (COPY from an Arrow view, as the benchmark's
// helper does) reads back the same, by DuckDB and by sluice scan, and
// as the rows of the Arrow data itself.
func TestParquetWriteReadsBack(t *testing.T) {
	dir := t.TempDir()
	li, src := filepath.Join(dir, "lineitem"), filepath.Join(dir, "lineitem.arrows")
	sp, dp := filepath.Join(dir, "sluice.parquet"), filepath.Join(dir, "duckdb.parquet")
	sluice(t, "gen", "lineitem", "--rows", "60000", "--files", "2", "--out", li, "-q")
	sluice(t, "run", "scan "+li+" | write "+src)
	sluiceIn(t, src, "write", "--compression", "snappy", "--row-group-rows", "16384", sp)
	if err := writeParquet(src, dp, "snappy", 0); err != nil {
		t.Fatal(err)
	}
	order := " ORDER BY l_orderkey, l_linenumber"
	db := openDB(t)
	byDuck := duck(t, db, fmt.Sprintf("SELECT * FROM read_parquet('%s')", sp)+order)
	compare(t, "DuckDB reading sluice's and its own file", byDuck, duck(t, db, fmt.Sprintf("SELECT * FROM read_parquet('%s')", dp)+order))
	if len(byDuck) != 60000 || len(byDuck[0]) != 16 {
		t.Fatalf("DuckDB read %d rows from sluice's file, want 60000 of 16 columns", len(byDuck))
	}
	bySluice := sluiceCSV(t, "scan "+sp)
	compareCSV(t, "sluice reading its own and DuckDB's file", bySluice, sluiceCSV(t, "scan "+dp))
	arrowRows, err := csv.NewReader(strings.NewReader(sluiceIn(t, src, "to-csv"))).ReadAll()
	if err != nil || len(arrowRows) == 0 {
		t.Fatalf("the Arrow data as CSV: %d lines, %v", len(arrowRows), err)
	}
	compareCSV(t, "sluice reading its file and the Arrow data", bySluice, arrowRows[1:])
	if n := duck(t, db, fmt.Sprintf("SELECT count(*) FROM parquet_metadata('%s') WHERE column_id = 0", sp)); n[0][0] != "4" {
		t.Errorf("sluice's file has %s row groups, want 4 (60000 rows, 16384 a group)", n[0][0])
	}
}

// sluiceIn runs a sluice stage command with the file in on stdin.
func sluiceIn(t *testing.T, in string, args ...string) string {
	t.Helper()
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out, errb bytes.Buffer
	cmd := exec.Command(sluiceBin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sluice %q < %s: %v: %s", args, in, err, errb.String())
	}
	return out.String()
}

// compareCSV compares rows as sets of lines: DuckDB's COPY from an Arrow
// view may store row groups in another order than they came.
func compareCSV(t *testing.T, what string, a, b [][]string) {
	t.Helper()
	key := func(rows [][]string) []string {
		out := make([]string, len(rows))
		for i, r := range rows {
			out[i] = strings.Join(r, "\x00")
		}
		slices.Sort(out)
		return out
	}
	ka, kb := key(a), key(b)
	if len(ka) != len(kb) {
		t.Errorf("%s: %d rows and %d", what, len(ka), len(kb))
		return
	}
	for i := range ka {
		if ka[i] != kb[i] {
			t.Errorf("%s: first difference %q, %q", what, ka[i], kb[i])
			return
		}
	}
}
