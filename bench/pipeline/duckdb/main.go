// Command duckdb runs the pipeline benchmark's queries in DuckDB over
// the same Parquet files, for sluice's pipeline benchmark (go run
// ./bench/pipeline) to compare against. It is a module of its own so the
// sluice binary never links DuckDB (cgo and a static library of about
// 100 MB that the module brings).
//
//	duckdb -query b -files '/data/lineitem/*.parquet'
//
// It prints the query's result rows, tab-separated, then a line
// "elapsed SECONDS" with the time of the query alone (after opening an
// in-memory database).
//
// With -write it is the other side of the benchmark's Parquet write
// comparison: it reads an Arrow IPC file into memory, hands it to DuckDB
// as an Arrow view (duckdb-go's Arrow interface: build with -tags
// duckdb_arrow), and times COPY ... TO ... (FORMAT parquet) of it:
//
//	duckdb -write lineitem.arrow -out lineitem.parquet -compression snappy
//
// It prints "rows N" and "elapsed SECONDS", the time of the COPY alone.
//
// With -digest it reads a Parquet file back, as DuckDB sees it, and prints
// "rows N" and "sha256 HEX" of its rows in file order as CSV, so that two
// files can be checked to hold the same rows without trusting sluice's
// reader:
//
//	duckdb -digest lineitem.parquet
//
// With -sql it runs a file of SQL over a view of each table in a folder of
// tables (sluice gen tpch's output), for the TPC-H benchmark
// (go run ./bench/tpch), printing rows and "elapsed" as -query does:
//
//	duckdb -sql bench/tpch/queries/q03.sql -tables ./tpch
package main

import (
	"crypto/sha256"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

// The queries, as sluice runs them (see bench/pipeline).
var queries = map[string]string{
	"a": `select pickup_date, sum(trip_distance) as trip_distance
	      from read_parquet('%s') group by pickup_date
	      order by trip_distance desc, pickup_date limit 9`,
	"b": `select l_returnflag, l_linestatus,
	        sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price,
	        sum(l_extendedprice * (1 - l_discount)) as sum_disc_price,
	        sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge,
	        avg(l_quantity) as avg_qty, avg(l_extendedprice) as avg_price,
	        avg(l_discount) as avg_disc, count(*) as count_order
	      from read_parquet('%s')
	      where l_shipdate <= date '1998-09-02'
	      group by l_returnflag, l_linestatus
	      order by l_returnflag, l_linestatus`,
	// j: a join with an aggregated side (each order's quantity beside its lines).
	"j": `select l_returnflag, sum(q) as q, count(*) as n
	      from read_parquet('%[1]s') l
	      join (select l_orderkey as k, sum(l_quantity) as q from read_parquet('%[1]s') group by l_orderkey) o
	        on l.l_orderkey = o.k
	      group by l_returnflag order by l_returnflag`,
}

func main() {
	query := flag.String("query", "b", "a, b or j")
	files := flag.String("files", "", "the Parquet files, a glob")
	threads := flag.Int("threads", 0, "DuckDB threads (0: its default, the number of cores)")
	write := flag.String("write", "", "an Arrow IPC file to write as Parquet (-out)")
	out := flag.String("out", "", "with -write: the Parquet file to write")
	compression := flag.String("compression", "snappy", "with -write: snappy, zstd or uncompressed")
	digest := flag.String("digest", "", "a Parquet file to read back: its rows and a hash of them as CSV")
	sqlFile := flag.String("sql", "", "a file of SQL to run over the tables under -tables (a view each)")
	tables := flag.String("tables", "", "with -sql: a folder of tables, each a folder of Parquet files (sluice gen tpch's output)")
	flag.Parse()
	if *sqlFile != "" {
		if err := runSQL(*sqlFile, *tables, *threads); err != nil {
			fmt.Fprintln(os.Stderr, "duckdb:", err)
			os.Exit(1)
		}
		return
	}
	if *digest != "" {
		if err := digestParquet(*digest); err != nil {
			fmt.Fprintln(os.Stderr, "duckdb:", err)
			os.Exit(1)
		}
		return
	}
	if *write != "" {
		if err := writeParquet(*write, *out, *compression, *threads); err != nil {
			fmt.Fprintln(os.Stderr, "duckdb:", err)
			os.Exit(1)
		}
		return
	}
	q, ok := queries[*query]
	if !ok || *files == "" {
		fmt.Fprintln(os.Stderr, "usage: duckdb -query a|b -files GLOB")
		os.Exit(2)
	}
	if err := run(fmt.Sprintf(q, strings.ReplaceAll(*files, "'", "''")), *threads, nil); err != nil {
		fmt.Fprintln(os.Stderr, "duckdb:", err)
		os.Exit(1)
	}
}

// runSQL runs the query in path over a view of each table under dir.
func runSQL(path, dir string, threads int) error {
	q, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var views []string
	for _, e := range entries {
		if e.IsDir() {
			glob := strings.ReplaceAll(filepath.Join(dir, e.Name(), "*.parquet"), "'", "''")
			views = append(views, fmt.Sprintf("create view %s as select * from read_parquet('%s')", e.Name(), glob))
		}
	}
	return run(string(q), threads, views)
}

// run prints the rows of q, run after setup, and the time of q alone.
func run(q string, threads int, setup []string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	if threads > 0 {
		setup = append(setup, fmt.Sprintf("SET threads = %d", threads))
	}
	for _, s := range setup {
		if _, err := db.Exec(s); err != nil {
			return err
		}
	}
	start := time.Now()
	rows, err := db.Query(q)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		cells := make([]string, len(vals))
		for i, v := range vals {
			if t, ok := v.(time.Time); ok {
				cells[i] = t.Format("2006-01-02")
			} else {
				cells[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(cells, "\t"))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	elapsed := time.Since(start)
	for _, l := range out {
		fmt.Println(l)
	}
	fmt.Printf("elapsed %.6f\n", elapsed.Seconds())
	return nil
}

// digestParquet has DuckDB write path's rows, in file order, as CSV to a
// temporary file and prints their count and the CSV's SHA-256.
func digestParquet(path string) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	dir, err := os.MkdirTemp("", "duckdb-digest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	csvPath := filepath.Join(dir, "rows.csv")
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	if _, err := db.Exec("SET preserve_insertion_order = true"); err != nil {
		return err
	}
	var rows int64
	if err := db.QueryRow("SELECT count(*) FROM read_parquet(" + quote(path) + ")").Scan(&rows); err != nil {
		return err
	}
	if _, err := db.Exec("COPY (SELECT * FROM read_parquet(" + quote(path) + ")) TO " + quote(csvPath) + " (FORMAT csv, HEADER true)"); err != nil {
		return err
	}
	f, err := os.Open(csvPath)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	fmt.Printf("rows %d\nsha256 %x\n", rows, h.Sum(nil))
	return nil
}
