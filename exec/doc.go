// Package exec runs small batch pipelines over Apache Arrow record
// batches: a source, then stages, then a sink.
//
//	sources   Scan (Parquet datasets), ReadIPC (an Arrow IPC stream, such
//	          as a stage's standard input), FromCSV, Merge (sorted
//	          objects), FromBatches
//	stages    Select, Drop, Rename, Filter, SumBy, AggBy, CountBy, Sort
//	          (spilling to disk), Top, Head, Merge
//	sinks     WriteIPC (a stage's standard output), Write (an object in
//	          any format of package format), Partition (n objects by a
//	          hash of key columns), ToCSV, Show, Collect
//
// Every stage works the same fused in one process (Run) and as its own
// process reading an Arrow IPC stream and writing one, and the two give
// byte-identical results: batch boundaries carry through both, hash
// aggregation sums each batch in row order and folds the batches in
// stream order, and ties in sort, top and merge go to the earlier row.
// The leading per-batch stages and the partial side of an aggregation run
// on several batches at once (package collect puts them back in order);
// whatever comes after them sees the batches in order, except a Write to an Arrow file right after them, which
// stores each batch as it is ready and lists them in stream order in the
// file's footer (so a reader still sees stream order).
//
// A stream written in arrival order (a scan with Arrival) carries each
// batch's place in the dataset in its metadata (Position, PositionKey).
// Per-batch stages that write a stream pass the positions on with their
// batches as they come; every other stage restores dataset order from
// them first (holding the batches ahead of the one due, spilling past
// Options.Memory), so its result is that of the stream in dataset order.
// A stream without positions is in dataset order as it stands.
//
// A pipeline is usually compiled from a plan (package plan) with Compile.
// Package fanout cuts plans itself, from their nodes, and runs their parts
// with a few operations here: Validate (binding the stages to a schema
// before any worker starts), Shuffle (an exchange, a pass-through in one
// process), Splitter (Partition's hash, rows kept in order), CompileAgg
// (per-batch summaries and the fold that gives the
// aggregation's bits), ScanPiece (a scan of some row groups), Concat and
// MergeSources.
//
// Mistakes in how a pipeline is written (a malformed expression, with the
// position of the problem; a missing column or a wrong type, naming the
// column and the stage) wrap ErrInvalid and are found before any data is
// read. A broken or truncated IPC stream on the input is an error, never
// a short result, and a sink writing IPC leaves out the end-of-stream
// marker when the pipeline fails, so the next process fails too.
//
// Memory: batches come from Options.Mem (a mempool.Pool reuses their
// buffers); every stage releases what it retains, on failure and
// cancellation too. Sort holds up to
// Options.Memory bytes before it spills sorted runs to temporary files.
//
// Every Parquet read goes through package scan, in dataset order. A
// Filter right after a Scan hands its filter to the scan as well, which
// skips the row groups and files it excludes (the rows are still
// filtered by the stage), so the pipeline reads what Scan with that
// Filter option reads.
//
// exec is not a query planner or SQL engine: a pipeline runs its stages
// as written, with no reordering, and expressions (package expr) cover
// comparisons, arithmetic, boolean logic, in, between, like, a few string
// functions, dates, timestamps and intervals, not a full SQL dialect. Nor is it
// distributed: stages run in one process (see package fanout for fan-out).
package exec
