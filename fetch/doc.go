// Package fetch is the I/O scheduler between object storage and whatever
// decodes the bytes: it turns byte ranges across many objects, given in the
// order they will be consumed, into a stream of ranged GETs that keeps a
// remote link full, and hands the bytes back in that same order.
//
// A Request is one unit of consumption: one object and the ranges of it
// that the consumer will read together (a Parquet row group's column
// chunks, or a window of an object being copied). For each unit, fetch
//
//   - coalesces ranges whose gap is below the hole size (first-byte latency
//     x per-stream bandwidth, measured, clamped to 8 KiB..8 MiB), so a hole
//     costs less to read than a second request would, as long as a unit's
//     holes add at most 1/16 to its bytes (the smallest are kept), and
//     splits coalesced spans over 24 MiB into 8-16 MiB parts that download
//     in parallel;
//   - copies the spans within bytes the consumer already read (Request.Have:
//     a small Parquet file its footer read took in whole) instead of
//     requesting them;
//   - admits it only while the bytes held for the consumer stay within the
//     memory budget (Options.Memory): that is the backpressure, and the
//     consumer's Unit.Release is what makes room; pages are reused;
//     within the budget, it holds at most a lead that starts at 16 MiB and
//     doubles only when the consumer waits for a unit the lead held back,
//     so a consumer slower than the link is not raced far ahead of (the
//     tail would take the link and the cores from the head for nothing);
//   - launches requests in consumption order within a window of bytes
//     requested and not yet arrived that starts at 16 MiB and grows by
//     every byte that arrives (slow start) up to the memory budget, so the
//     first units get the link instead of sharing it with every unit
//     behind them; the first unit's spans over 2 MiB go in 1 MiB parts
//     that download in parallel. The consumer starts on the first row
//     group while the rest stream in;
//   - keeps requests in flight up to a limit that starts at 16 and grows,
//     while the aggregate throughput keeps rising, up to 64; it does not
//     depend on the number of cores;
//   - retries throttling, resets and short bodies with internal/retry's
//     policy (exponential backoff, full jitter; open an S3 store with
//     store.Options{Attempts: 1} so the SDK's retries do not multiply
//     with it), resuming from the byte a body reached, and re-issues
//     stragglers (no progress for several first-byte p99s, or far slower
//     than the typical request and than the requests running beside it):
//     the duplicate races the original, the first to finish wins, the other
//     is cancelled, and every byte is written into the unit exactly once; a
//     duplicate started for a stall is dropped if the original goes on
//     before it delivered, so a pause does not cost the rest of the part
//     twice;
//   - pins each object's ETag across all its units (from the Request, or
//     from the first response), so an object replaced during the read fails
//     with a *ChangedError instead of mixing two versions.
//
// Units come back from Plan.Next in request order as soon as their requests
// are issued; Unit.ReadAt and Unit.WriteTo block until the bytes they need
// have arrived, so decoding the first column chunk overlaps with fetching
// the rest. Unit.ReadAt has io.ReaderAt's contract for the offsets the unit
// covers, which is what an arrow-go Parquet reader (with buffered streams
// off, one ReadAt per column chunk) needs to be served from memory.
//
// What it is not: a cache (bytes are dropped on Release; nothing is kept
// between plans), a general read-ahead for unknown access patterns (the
// consumer states its ranges up front), or a writer (see store.Writer).
// It does not reorder: a unit that arrives late holds up the ones behind
// it, by design, since the consumer wants them in order; put independent
// streams in separate plans.
package fetch
