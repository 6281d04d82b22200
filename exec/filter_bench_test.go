package exec

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// BenchmarkFilterStage evaluates filters over lineitem batches already
// in memory, as the filter stage does: the expression's evaluation and
// the copying of the rows it keeps. Bytes are the batches' rows x 8 per
// column read.
func BenchmarkFilterStage(b *testing.B) {
	_, lineitem := testData(b)
	var recs []arrow.RecordBatch
	err := Run(context.Background(), Pipeline{Source: Scan([]string{lineitem}, ScanOptions{Columns: []string{"l_shipdate", "l_discount", "l_quantity", "l_shipmode", "l_extendedprice"}}),
		Stages: []Stage{Collect(nil, func(rec arrow.RecordBatch) error { rec.Retain(); recs = append(recs, rec); return nil })}}, Options{Open: testOpen})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	for _, c := range []struct{ name, expr string }{
		{"date-and-float", "l_shipdate <= date '1998-09-02' and l_discount < 0.05"},
		{"arith-or-string", "l_quantity * l_extendedprice > 100000 or l_shipmode = 'AIR'"},
	} {
		b.Run(c.name, func(b *testing.B) {
			f, err := Filter(c.expr)
			if err != nil {
				b.Fatal(err)
			}
			pl, err := f.bind(newEnv(Options{Open: testOpen}), recs[0].Schema())
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(rows * 8 * 2)
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range recs {
					out, err := pl.mapper.mapBatch(context.Background(), r)
					if err != nil {
						b.Fatal(err)
					}
					if out != nil {
						out.Release()
					}
				}
			}
		})
	}
}
