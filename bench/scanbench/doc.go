// Package scanbench measures how close package scan comes to what a link
// gives, against the ways people read Parquet from object storage without
// it. In one run, over the same objects and the same link profile, it
// times
//
//   - raw: GETs of every byte of the objects into a discard buffer, at
//     each concurrency of a sweep (4..64; more requests than objects split
//     them into equal ranges), the best kept: what the link gives;
//   - scan: package scan reading all columns, every batch released;
//   - naive: arrow-go's Parquet reader (one ReadAt per column chunk, its
//     own footer reads) over store.ReaderAt, one ranged GET per ReadAt,
//     with 1, 2, 4 or 8 files read at once, the best kept;
//   - whole: each object fetched with one GET into memory, then decoded
//     there by arrow-go, 1, 2, 4 or 8 files at once, the best kept;
//   - decode: package scan reading all columns of file bytes already in
//     memory (a store over them, no link): the ceiling of scan on this
//     machine; beside it, the same bytes decoded by arrow-go's record
//     reader, GOMAXPROCS row groups at once, as the reference scan's own
//     decoding is measured against (decode/arrow-go).
//
// Every rate is file bytes (the objects' sizes) per second of wall time,
// so a ratio of two rates is the inverse ratio of their times. Ratios are
// taken within a run and reported as medians over runs, since on a shared
// machine two runs minutes apart see different neighbours.
//
// Also measured on request: a projection (bytes scan fetched against the
// bytes of the projected column chunks and footers, computed here from the
// footers), a scan under a fault profile beside the same scan without
// faults (time ratio and per-column checksums), and the peak resident
// memory of a child process scanning with a memory budget. New opens a
// dataset; Run makes the runs; Measure makes whatever the Config asks
// for, the child's peak RSS included, as one Document that sluice
// bench-scan prints or encodes as JSON. Settings is a benchmark as sluice
// bench-scan's flags spell it, read and checked into a Config.
//
// What it is not: a benchmark of the store or of the network (see package
// bench), or a test of correctness beyond the checksums it compares.
package scanbench
