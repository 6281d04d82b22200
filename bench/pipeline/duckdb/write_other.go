//go:build !duckdb_arrow

package main

import "errors"

func writeParquet(in, out, compression string, threads int) error {
	return errors.New("-write needs DuckDB's Arrow interface: build with -tags duckdb_arrow")
}
