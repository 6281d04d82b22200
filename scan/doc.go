// Package scan reads a Parquet dataset from a store into Arrow record
// batches at the speed of the network: footers in one suffix read each,
// only the column chunks a projection needs, row groups a filter cannot
// match skipped by their statistics, the bytes fetched ahead by package
// fetch, and decoding by arrow-go from memory already there, on several
// cores, while later row groups are still arriving.
//
// # Datasets
//
// Open takes a pattern, a key in the store, that names
//
//   - one object (read whatever its name);
//   - a prefix, when it ends in "/", is empty, or names no object but
//     has objects under it: every object under it whose key ends in
//     ".parquet", except those with a path element below the prefix
//     starting with "_" or "." (_SUCCESS, _metadata, _temporary/, .crc:
//     other writers' bookkeeping);
//   - a glob, when it has *, ? or [: the objects path.Match matches (so *
//     does not cross a "/"), whatever their names.
//
// OpenURL takes a URL instead (s3://bucket/prefix/, a path, a glob),
// opens its store as the sluice command does, and closes it with the
// Dataset.
//
// Files are in key order, which is the dataset order. Directories of the
// form key=value below the prefix (or the glob's fixed directory) are
// Hive-style partitions: each key becomes a column after the files' own,
// int64 when every value is a base-10 integer, else string, null for
// __HIVE_DEFAULT_PARTITION__. Every file must have the same partition
// keys. The files' schema is the first file's; every other file must
// have the columns a scan reads, with the same types (extra columns are
// fine). An empty file, or one whose row groups are all pruned,
// contributes no batch; a pattern naming no Parquet file is a
// *NoFilesError.
//
// # Reading
//
// Open reads every footer (32 at a time) with one suffix read of 64 KiB,
// and a second only for a larger footer (later files then ask for more);
// a file of at most 1 MiB is read whole by that one read, and its row
// groups are decoded from those bytes with no request of their own (the
// first files, up to 16 MiB and an eighth of Options.Memory of them, which
// fetch then holds less of), so a scan of a few small files takes one
// listing and one read per file. Open hands the parsed metadata to arrow-go, so arrow-go never reads a
// footer itself. The listing and the footer reads are retried when
// throttled or cut short, and a footer read still running after half a
// second is raced by a second one. Each row group to read is one
// fetch.Request of exactly the byte ranges arrow-go will read for the
// needed columns (computed as arrow-go computes them, padding for old
// parquet-mr files included), pinned to the version the footer came from. The footer reads also
// measure the link's first-byte latency, which the dataset's
// fetch.Fetcher starts from. Dataset.Scan runs a fetch plan over the row
// groups in dataset order and Options.Concurrency workers, each
// decoding one row group at a time with pqarrow's record reader in
// batches of Options.BatchRows rows; a read arrow-go makes outside the
// fetched ranges is served by a direct ranged read (Stats.Fallbacks).
//
// # Batches and ownership
//
// Scanner.Next delivers batches in the order they are decoded, not
// dataset order: each carries its Position (file, row group, batch, and
// whether it is the row group's last), so a later stage can restore
// dataset order with bounded memory. The consumer owns every batch Next
// delivers and must Release it; Close releases what was not delivered.
// All Arrow memory comes from Options.Mem. Dataset.Reader is a scan as
// arrow-go's array.RecordReader, in dataset order, owning each batch
// until the next call of Next as arrow-go's readers do.
//
// # Filters
//
// Options.Filter is an expression of package expr (the language of
// every sluice filter: and/or/not, in, between, like, is null, SQL's
// reading of '1998-09-02' against a date column), bound to the dataset's
// schema in Open, so a mistake fails before any data is read (an
// *expr.Error; a missing column is also an *expr.ColumnError). What its
// top-level conjuncts say of single columns (expr.Expr.Conjuncts) skips
// files by their partition values and row groups by their statistics
// (only statistics arrow-go considers correct for the file's writer);
// the whole expression then filters the rows of what is read. A
// comparison with null does not hold. Options.Prune skips row groups
// the same way without filtering rows, for a caller that evaluates the
// filter itself.
//
// # What it is not
//
// Not a query engine: no expressions beyond the filter, no joins or
// aggregates (package exec). Not a writer. Not a reader of encrypted
// files. It does not merge schemas that differ between files, and does
// not read page indexes or bloom filters.
//
// Errors name the file (a *FileError, "scan s3://b/x.parquet: ...");
// arrow-go panics on corrupt input are turned into such errors.
package scan
