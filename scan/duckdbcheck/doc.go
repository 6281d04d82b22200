// Package duckdbcheck holds one test: every file of the Parquet format
// project's test data (parquet-testing) that DuckDB reads, package scan
// reads with the same values. It is a module of its own so that only
// this check links DuckDB (cgo and a prebuilt static library); it needs
// the build tag duckdb_arrow, which duckdb-go's Arrow interface is
// behind, and scripts/test passes it.
package duckdbcheck
