// Package dist runs sluice pipelines fanned out over many worker
// processes, with object storage as the only thing they share.
//
// A job is a pipeline cut at its exchanges into phases of independent
// tasks (see Run):
//
//	map         a task per piece of the scan's datasets (a file, or a
//	            range of row groups of a large one, the pieces
//	            collect.Pieces cuts for Flight endpoints) runs the leading
//	            per-batch stages, and the partial side of an aggregation
//	            after them (exec.SplitAgg): one summary per batch
//	map-to-n    with a shuffle stage (exec.Shuffle) right after them, a map
//	            task hash-partitions its rows into R parts and writes ONE
//	            object holding all R, each an Arrow IPC stream, with their
//	            byte ranges and CRC-32C checksums in its done record (and
//	            in the object's footer)
//	map-from-n  reducer r reads part r of every committed map object, with
//	            ranged reads through package fetch (all in flight within
//	            its budget), checks each checksum, and runs the stages
//	            after the shuffle up to and including an aggregation
//	final       the driver folds the summaries, or merges the reducers'
//	            groups by key, in dataset order, and runs the rest of the
//	            pipeline, ending in its sink; or, with Options.Out, the
//	            last phase's tasks write the results to a destination
//	            prefix, one object each, and the driver a manifest there
//
// Results are those of exec.Run in one process, to the bit: exec sums
// each batch in row order and folds the batches in stream order, and a
// fanned-out job keeps both (a summary per batch, folded in dataset
// order; a reducer sees each key's rows in the batches and order they had).
//
// Workers are the same binary (sluice worker): each reads the job's spec
// (job.json under the job's prefix, see Spec) and takes its task index
// from the environment (JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID). An
// Executor only starts, watches and stops workers; Local runs them as
// processes of this machine. Which task is done is read from the store,
// never from the executor: every attempt writes its output under a name
// of its own and then a done record; the driver commits the first done
// record of each task in the phase's manifest, and readers read only
// what a manifest lists. A task whose attempt fails or is killed is
// started again (up to Options.Attempts), a straggler gets a duplicate
// once the rest is done (first commit wins), and a task that keeps
// failing fails the job with a TaskError naming it, its piece, the
// worker and the last error. The job's objects are deleted at the end,
// on failure and cancellation too; Options.Keep keeps the committed
// ones.
//
// dist is not a scheduler or a query planner: it runs the stages as
// written, places no exchange the pipeline does not name, reads only
// scan sources, and allows one shuffle, which must come right after the
// per-batch stages and be followed by an aggregation. A map task keeps
// its shuffle parts in a local temporary file until it writes them as
// one object, and the driver runs everything after the aggregation
// (sort, top, head, the sink) in one process. Executors for Kubernetes and Slurm are not here yet.
package dist
