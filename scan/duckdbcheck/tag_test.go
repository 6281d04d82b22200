//go:build !duckdb_arrow

package duckdbcheck

import "testing"

// Without the tag the check would pass by running nothing.
func TestAgainstDuckDB(t *testing.T) {
	t.Fatal("build with -tags duckdb_arrow (duckdb-go's Arrow interface), as scripts/test does")
}
