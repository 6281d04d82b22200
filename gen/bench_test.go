package gen

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/store"
)

// benchRows is large enough for full-size batches and several row groups,
// small enough to keep a run short on a shared machine.
const benchRows = 1 << 20

func benchGen(b *testing.B, fn func(context.Context, *store.Store, string, Options) (Result, error)) {
	for _, conc := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
			ctx := context.Background()
			opts := Options{Rows: benchRows, Files: 2 * conc, Seed: 1, Concurrency: conc}
			// The text pool is built once per process; keep it out of the timing.
			textPool()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			var bytes int64
			for range b.N {
				st := store.New(store.NewMemDriver(), "mem://bench/")
				res, err := fn(ctx, st, "d", opts)
				if err != nil {
					b.Fatal(err)
				}
				bytes = res.Bytes
			}
			cpu := cpuTime() - cpu0
			b.SetBytes(bytes)
			b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			// Output per second of CPU (all threads, GC included): the rate
			// one core sustains, whatever else shares the machine.
			if cpu > 0 {
				b.ReportMetric(float64(bytes)*float64(b.N)/(1<<20)/cpu.Seconds(), "MiB/cpu-s")
			}
		})
	}
}

// benchBatches times the Arrow batches alone, without Parquet: how much
// of a file's cost is generating its values.
func benchBatches(b *testing.B, newSource func(memory.Allocator) source) {
	b.Run("batches-only", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			src := newSource(memory.DefaultAllocator)
			for done := int64(0); done < benchRows; done += defaultBatchRows {
				src.next(int(min(defaultBatchRows, benchRows-done))).Release()
			}
			src.release()
		}
		b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

func BenchmarkLineitem(b *testing.B) {
	benchGen(b, Lineitem)
	benchBatches(b, func(mem memory.Allocator) source {
		s := newLineitemSource(mem, writeSchema(LineitemSchema(), lineitemDict))
		s.val, s.lines = newRNG(1, tableLineitem, 0, streamValues), newRNG(1, tableLineitem, 0, streamOrders)
		s.rowsLeft = benchRows
		s.parts, s.supps = keyRanges(benchRows)
		s.text = textPool()
		return s
	})
}

func BenchmarkTaxi(b *testing.B) {
	benchGen(b, Taxi)
	benchBatches(b, func(mem memory.Allocator) source {
		s := newTaxiSource(mem, writeSchema(TaxiSchema(), taxiDict))
		s.r = newRNG(1, tableTaxi, 0, streamValues)
		s.clock = newPickupClock(taxiYear)
		s.rows = benchRows
		return s
	})
}
