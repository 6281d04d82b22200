// Package gen writes deterministic synthetic datasets as snappy Parquet
// files through a store.Store, for benchmarks and tests of the layers that
// read them back (fetch, scan, exec).
//
// Two tables are provided:
//
//   - Lineitem: the 16 columns of TPC-H lineitem with the value
//     distributions of the TPC-H specification (4.2.3): sparse, increasing
//     order keys with 1 to 7 lines per order, part and supplier keys over
//     ranges scaled from scale factor 1 to the row count, dates derived
//     from a uniform order date, flags consistent with those dates, and
//     comments cut from a text built with the TPC-H grammar and word lists.
//   - Taxi: a NYC-taxi-trip-shaped table for 2023 with pickups in time
//     order (a daily and weekly rhythm), trip durations and fares that
//     follow the distance, and skewed passenger counts, zones and payment
//     types; total_amount is exactly fare_amount + tip_amount +
//     tolls_amount.
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
// gen is not a TPC-H implementation: it does not produce the other seven
// tables, its values do not match dbgen's row for row, and results on it
// are not TPC-H results. Nor is it a general data faker: the schemas are
// fixed, chosen for benchmarking columnar I/O.
package gen
