// Package gen writes deterministic synthetic datasets as snappy Parquet
// files through a store.Store, for benchmarks and tests of the layers that
// read them back (fetch, scan, exec).
//
// Three datasets are provided:
//
//   - Lineitem: the 16 columns of TPC-H lineitem with the value
//     distributions of the TPC-H specification (4.2.3): sparse, increasing
//     order keys with 1 to 7 lines per order, part and supplier keys over
//     ranges scaled from scale factor 1 to the row count, dates derived
//     from a uniform order date, flags consistent with those dates, and
//     comments cut from a text built with the TPC-H grammar (a subset of
//     its words, unweighted; TPCH uses the specification's weights).
//   - Taxi: a NYC-taxi-trip-shaped table for 2023 with pickups in time
//     order (a daily and weekly rhythm), trip durations and fares that
//     follow the distance, and skewed passenger counts, zones and payment
//     types; total_amount is exactly fare_amount + tip_amount +
//     tolls_amount.
//   - TPCH: the eight TPC-H tables at a scale factor, a folder each, with
//     the specification's cardinalities, keys (every foreign key resolves;
//     customers whose key is a multiple of three place no orders) and
//     value distributions. Orders and lineitem draw each order from a
//     source seeded by its index, so o_orderstatus and o_totalprice agree
//     with the lines even though other files hold them. Its lineitem has
//     Lineitem's schema. Its bytes depend on SF, Seed, FileRows and
//     RowGroupRows, as a dataset's do on its Options below.
//
// A dataset is Files objects named prefix/part-NNNNN.parquet holding Rows
// rows between them. Its bytes depend only on Rows, Files, Seed and
// RowGroupRows: every file draws from its own PCG source seeded from Seed
// and its index, and every value is integer arithmetic until a final
// division, so the output is the same whatever Concurrency is and on every
// platform (floating-point fusion cannot change it).
//
// Money is float64, not decimal: downstream operators sum and compare it
// without decimal kernels. Values are whole cents (x/100 exactly as a Go
// float64 literal would give), so sums are exact to the cent after
// rounding.
//
// Low-cardinality string columns (l_returnflag, l_linestatus,
// l_shipinstruct, l_shipmode, payment_type) are dictionary-encoded in the
// files; readers get plain string columns either way, since the Arrow
// schema is not stored in the file.
//
// Each file is committed only when it is complete (store.Writer.Close);
// on an error or cancellation the files in progress are aborted and the
// ones already committed are deleted, so a failed run leaves nothing of
// itself behind. A reader listing the prefix during a run may see some
// files before a failure removes them.
//
// gen is not dbgen: its values do not match dbgen's row for row (the
// same distributions, other random draws), comments are cut from a
// smaller text pool, and results on it are not audited TPC-H results.
// Nor is it a general data faker: the schemas are fixed, chosen for
// benchmarking.
package gen
