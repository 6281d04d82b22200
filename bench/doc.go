// Package bench measures what an object store gives: a parallel
// write-then-read benchmark of pseudorandom, incompressible objects with a
// record of every request, and the analysis that turns those records into
// the figures people compare (aggregate MiB/s over the steady-state window
// and over the whole phase, per-request MiB/s, first- and last-byte
// latency percentiles, errors and retries).
//
// Run drives a store.Store through one or more cells (object size x
// concurrency), each a put phase and a get phase, and returns every
// Record with one Summary per phase. Analyze computes a Summary from
// records alone, so the arithmetic is testable on synthetic records and
// reusable on records saved by an earlier run (WriteRecords).
//
// Safety: Run writes only under a fresh prefix it makes inside the one it
// is given (sluice-bench-<time>-<random>/), checks that prefix is empty
// before writing, and deletes what it wrote unless Config.Keep, also when
// the run fails or its context is cancelled.
//
// RunWorkers runs the same benchmark from several worker processes at
// once (a Launcher starts them: ExecLauncher, each run's workers as one
// phase of a fanout.Executor, as sluice run --workers runs a phase's
// tasks; each worker process is RunWorker) and reports aggregate and
// per-worker figures and the scaling against the fewest workers;
// bench/chart draws every request of every worker. Measure and Predict
// are the scale model: from a run's records, what W workers would get
// under S3's per-prefix request rates (PredictFrom: from a saved run).
// ReadRecords reads saved records back.
//
// RunReport and RunWorkersReport are what sluice bench does with a run:
// they run it, save its records and plot (Output.Charts; atomically: a failed write
// leaves no half file) and write its report or its JSON document
// (Document, WorkersDocument), as Output says. Settings is a benchmark as
// sluice bench's flags spell it, read and checked into a Config (or a
// WorkersConfig, a PredictConfig); WorkersConfig.WorkerArgs writes a
// worker's part back as the flags its process is given.
//
// What it is not: a model of the network (pair it with package sim to see
// what a remote link would give), or a scheduler: the workers of a run are
// independent, and nothing but the store is shared between them.
package bench
