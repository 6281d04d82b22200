package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// BenchmarkAggregate runs a pipeline's parallel front over batches
// already in memory, as each worker does (the filter's mask, then the
// aggregation's partial of the batch) and folds the partials: query B
// (TPC-H Q1's shape, flags read as dictionaries) and query A (sum by
// pickup date). Bytes are the batches' rows x 8 per column read; the
// allocations are what the evaluation and grouping make per batch.
func BenchmarkAggregate(b *testing.B) {
	taxi, lineitem := testData(b)
	must := mustStage(b)
	for _, c := range []struct {
		name   string
		src    SourceStage
		stages []Stage
		cols   int64
	}{
		{"query-B-dict", Scan([]string{lineitem}, ScanOptions{Columns: queryBCols, Dict: []string{"l_returnflag", "l_linestatus"}}),
			[]Stage{must(Filter("l_shipdate <= date '1998-09-02'")), must(AggBy([]string{"l_returnflag", "l_linestatus"}, QueryBAggs))}, int64(len(queryBCols))},
		{"query-A", Scan([]string{taxi}, ScanOptions{Columns: []string{"pickup_date", "trip_distance"}}),
			[]Stage{SumBy([]string{"pickup_date"}, []string{"trip_distance"})}, 2},
	} {
		b.Run(c.name, func(b *testing.B) {
			var recs []arrow.RecordBatch
			err := Run(context.Background(), Pipeline{Source: c.src, Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error { rec.Retain(); recs = append(recs, rec); return nil })}}, Options{Open: testOpen})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			plans, err := bindAll(newEnv(Options{Open: testOpen}), recs[0].Schema(), append(c.stages, Collect(nil, func(arrow.RecordBatch) error { return nil })))
			if err != nil {
				b.Fatal(err)
			}
			var mappers []mapper
			for _, pl := range plans[:len(plans)-2] {
				mappers = append(mappers, pl.mapper)
			}
			agg := plans[len(plans)-2].agg
			var rows int64
			for _, r := range recs {
				rows += r.NumRows()
			}
			b.SetBytes(rows * 8 * c.cols)
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range recs {
					r.Retain()
					res := work(context.Background(), r, mappers, agg)
					if res.err != nil {
						b.Fatal(res.err)
					}
					if err := agg.fold(res.partial); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
