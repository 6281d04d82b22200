// Package sim is the link model: a store.Driver wrapper that makes any
// backend (usually the in-memory one, or MinIO on loopback) behave like
// object storage seen across a network.
//
// It exists so we can reason about machines we do not have and test
// reliability without a flaky network. A Profile describes the link:
//
//   - first-byte latency, log-normal with a median (TTFB) and a 99th
//     percentile (TTFBP99), paid by every request;
//   - bandwidth per stream and for the whole link, downloads and uploads
//     budgeted separately (full duplex); a writer whose driver sends
//     requests of its own (store.RequestWriter: S3's PUT, and each part of
//     a multipart upload) has each request paced as a stream of its own
//     while the real request goes on, so parts in flight together share
//     the link as parallel GETs do; any other writer is one stream;
//   - faults: 503 SlowDown before any byte, a connection reset part way
//     through a body, and a stall part way through a body;
//   - S3's request rates per key prefix (3,500 writes and 5,500 reads a
//     second in the s3 profile): a token bucket per prefix (see KeyPrefix)
//     and class, a 503 SlowDown (ErrRateLimited) above it.
//
// Profiles come from Parse, by name ("s3": an instance next to S3) or in a
// custom form ("ttfb=15ms,p99=80ms,stream=90MiB/s,link=1200MiB/s"), and go
// into store.Options.Wrap through WrapOption. Draws come from one seeded
// source, so a serial run is reproducible given Profile.Seed.
//
// What it is not: a network emulator. It models no TCP (no slow start, no
// congestion, no packet loss), no repartitioning (a prefix's rate is fixed,
// where S3 raises it under sustained load; and the buckets live in one
// process, so processes each behind their own link each get the whole
// rate), and it never changes bytes: whatever it delivers is exactly what the
// inner driver returned, possibly cut short by an error. It adds cost on
// top of the inner driver; it cannot make a slow backend faster. Its clock
// is Go's timers, which wake 0.1-0.5ms late on a loaded machine, so
// latencies of a few milliseconds or less come out measurably long.
package sim
