// Package fanout runs sluice pipelines fanned out over many worker
// processes, with object storage as the only thing they share.
//
// A job is a pipeline cut at its exchanges into phases of independent
// tasks (see Run):
//
//	map         a task per piece of the scan's datasets (a file, or a
//	            range of row groups of a large one, the pieces
//	            scan.Pieces cuts for Flight endpoints) runs the leading
//	            per-batch stages, and the partial side of an aggregation
//	            after them (exec.CompileAgg): one summary per batch
//	map-to-n    with a shuffle stage (exec.Shuffle) right after them, a map
//	            task hash-partitions its rows into R parts and writes ONE
//	            object holding all R, each an Arrow IPC stream, with their
//	            byte ranges and CRC-32C checksums in its done record (and
//	            in the object's footer); before a sort it numbers every
//	            row with its place in the dataset (PositionColumn)
//	map-from-n  reducer r reads part r of every committed map object, with
//	            ranged reads through package fetch (all in flight within
//	            its budget), checks each checksum, and runs the stages
//	            after the shuffle up to and including an aggregation or a
//	            sort
//	final       the driver folds the summaries, or merges the reducers'
//	            groups by key, or their sorted rows by the sort's keys and
//	            then each row's place (ties in dataset order), and runs
//	            the rest of the pipeline, ending in its sink; or, with
//	            Options.Out, the last phase's tasks write the results to a
//	            destination prefix, one object each, and the driver a
//	            manifest there
//
// The driver and the reducers read what tasks wrote as it is consumed,
// in chunks of at most 8 MiB through fetch, 64 MiB in flight in all,
// whatever the size of an output; each checksum is checked before the
// last bytes of its stream are handed on. No output is ever held whole,
// so the driver's memory does not grow with the size of the job's results.
//
// Request rates: S3 partitions a bucket by key prefix and answers 503
// SlowDown above 3,500 writes and 5,500 reads a second on one, and the
// reducers of a shuffle read every map object at once. Each phase's data
// objects go under a prefix of their own (p0/00/ .. p0/ff/: task t under
// t mod Spread), Spread by default one a task of the largest phase, up to
// MaxSpread (256); Options.Spread 1 puts them all under p0/. The job's own
// requests (spec, manifests, done records, cleanup) are retried on 503
// SlowDown as fetch retries its reads, and the retries are counted per
// phase (Output.Retries, the driver's log). docs/fanout.md measures a
// shuffle under one prefix and spread, in the link model with its
// request limits lowered (sim's reqlimit and reqshare).
//
// Results are those of exec.Run in one process, to the bit: exec sums
// each batch in row order and folds the batches in stream order, and a
// fanned-out job keeps both (a summary per batch, folded in dataset
// order; a reducer sees each key's rows in the batches and order they had).
//
// Workers are the same binary (sluice worker): each reads the job's spec
// (job.json under the job's prefix, see Spec) and takes its task index
// from the environment (JOB_COMPLETION_INDEX, SLURM_ARRAY_TASK_ID). An
// Executor runs each phase's tasks on workers (RunPhase) and knows
// nothing of what they do: Local, here, starts them as processes of this
// machine one by one; the Slurm and Kubernetes executors, in packages
// fanout/slurm and fanout/kubernetes (apart, so that importing fanout
// compiles no Kubernetes client), submit each phase as one array job or
// Indexed Job, which the batch system runs and retries. Every executor
// runs other workers of the same binary too (PhaseRun.Argv): sluice bench
// --workers runs each run's benchmark workers as one phase
// (bench.ExecLauncher), so there is one way to start workers. Which task
// is done is read from the store, never from the executor: every attempt
// writes its output under a name of its own and then a done record; the
// driver commits the first done record it reads of each task in the
// phase's manifest, and readers read only what a manifest lists. A task
// whose attempt fails or is killed is started again (up to
// Options.Attempts), a straggler gets a duplicate from Local once the
// rest is done (first commit wins), and a task that keeps failing fails
// the job with a TaskError naming it, its piece, the worker and the last
// error. The job's objects are deleted at the end, on failure and
// cancellation too; Options.Keep keeps the committed ones.
//
// fanout is not a scheduler or a query planner: it runs the stages as
// written, places no exchange the pipeline does not name, reads only
// scan sources, and allows one shuffle, which must come right after the
// per-batch stages and be followed (after more per-batch stages, but no
// select, drop or rename before a sort) by an aggregation or a sort. A map
// task keeps its shuffle parts in a local temporary file until it writes
// them as one object, and the driver runs everything after the
// aggregation or the sort (top, head, the sink) in one process. A sort
// after a shuffle cannot write to a destination (each reducer's part is
// sorted, not the whole).
package fanout
