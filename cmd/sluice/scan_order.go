package main

import (
	"context"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// scanInDatasetOrder is `scan --order dataset` for streams and Parquet:
// each file is read in order by a scan of its own, --concurrency files at
// once, and collect hands the batches on in dataset order, files ahead of
// a slow one waiting once its window is full.
func scanInDatasetOrder(ctx context.Context, st *store.Store, pattern string, ds *scan.Dataset, so scan.Options, sink *scanSink) (scan.Stats, error) {
	fs := collect.ScanFiles(ctx, st, pattern, ds, so, collect.Options{Order: collect.Dataset, Parallel: so.Concurrency})
	err := collect.Drain(fs.Stream, func(b collect.Batch) error { return sink.write(b.RecordBatch, b.Pos.Position) })
	return fs.ScanStats(), err
}
