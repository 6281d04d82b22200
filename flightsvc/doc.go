// Package flightsvc serves Parquet datasets over Arrow Flight and
// fetches them back (Server, Get; GetTo writes what Get fetches to a
// file, a store or a stream, as sluice get does).
//
// GetFlightInfo cuts a request into endpoints, one per piece of row
// groups (scan.Pieces), in dataset order. DoGet reads a piece with
// package scan (the piece's file alone, by scan.PiecePattern, limited to
// its row groups by scan.Options.RowGroups, in dataset order by
// scan.Options.Ordered when the request is ordered) and streams each
// batch with its position in the whole dataset (collect.MarshalPos) as
// app_metadata. Get fetches the endpoints in parallel and puts them back
// in order with package collect, so a dataset fetched over Flight has
// the batches and positions a local scan gives.
//
// An Iceberg table under a root (or, with ServerOptions.Catalog, a REST
// catalog's table whose files are under a root) is served as the table:
// package exec plans it (exec.PlanTable), an endpoint per data file with
// its deletes in the ticket, and DoGet reads that file with exec's scan
// (exec.ScanOptions.Tasks). Everything a served table reads goes through
// the roots' stores: a file outside them, named by a table's metadata or
// by a forged ticket, is refused (PermissionDenied).
//
// Given a Prometheus registry (ServerOptions.Metrics), the server counts
// its calls by method and gRPC status code, their latency, the calls in
// flight and the bytes, batches and rows sent (docs/metrics.md).
//
// The descriptor (Request) and ticket are JSON read from clients; both
// parsers have fuzz tests. A request names a dataset, columns and a
// filter expression, never a pipeline, so no client makes the server run
// a program (an exec stage); were requests ever to carry pipelines, they
// must pass plan.RefuseExec.
package flightsvc
