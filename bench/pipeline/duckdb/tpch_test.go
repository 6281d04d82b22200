package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTPCH: the 22 TPC-H queries of bench/tpch/queries, each a sluice
// pipeline beside the specification's SQL, give DuckDB's rows in DuckDB's
// order over the tables `sluice gen tpch` writes; fanned out over 4
// workers they give the rows of one process.
func TestTPCH(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tpch")
	sluice(t, "gen", "tpch", "--sf", "0.05", "--out", dir, "--file-rows", "60000")
	db := openDB(t)
	for _, table := range []string{"region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"} {
		if _, err := db.Exec(fmt.Sprintf("create view %s as select * from read_parquet('%s/%s/*.parquet')", table, dir, table)); err != nil {
			t.Fatal(err)
		}
	}
	queries := filepath.Join("..", "..", "tpch", "queries")
	empty := 0
	for i := 1; i <= 22; i++ {
		t.Run(fmt.Sprintf("q%02d", i), func(t *testing.T) {
			pipe, err1 := os.ReadFile(filepath.Join(queries, fmt.Sprintf("q%02d.pipe", i)))
			query, err2 := os.ReadFile(filepath.Join(queries, fmt.Sprintf("q%02d.sql", i)))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			// Q11's FRACTION is 0.0001 / SF (here 0.05).
			params := strings.NewReplacer("{dir}", dir, "{fraction}", "0.002")
			p := strings.TrimSpace(params.Replace(string(pipe)))
			got := sluiceCSV(t, p)
			want := duck(t, db, params.Replace(string(query)))
			compare(t, "fused", got, want)
			if len(want) == 0 || len(want) == 1 && slices.Equal(want[0], make([]string, len(want[0]))) {
				empty++
			}
			workers := csvRows(t, sluice(t, "run", "--workers", "4", "--piece-size", "256KiB", p+" | to-csv"))
			if !slices.EqualFunc(workers, got, slices.Equal) {
				t.Errorf("--workers 4: %d rows, one process %d, or others", len(workers), len(got))
			}
		})
	}
	if empty > 2 {
		t.Errorf("%d queries have no rows at this scale: the data does not exercise them", empty)
	}
}
