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
// What it is not: a load generator for many machines, or a model of the
// network; pair it with package sim to see what a remote link would give.
package bench
