package scan

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/store"
)

// benchStore is a 1M-row lineitem dataset in memory, made once.
var benchStore *store.Store

func lineitemBench(b *testing.B) *store.Store {
	if benchStore == nil {
		st := store.New(store.NewMemDriver(), "mem://bench/")
		if _, err := gen.Lineitem(context.Background(), st, "lineitem", gen.Options{Rows: 1 << 20, Files: 4, Seed: 1}); err != nil {
			b.Fatal(err)
		}
		benchStore = st
	}
	return benchStore
}

// benchScan scans the in-memory dataset, where fetching is a copy: what
// it measures is decoding (and the batches' assembly), on every core.
// Bytes are the column chunks read.
func benchScan(b *testing.B, opts Options) {
	st := lineitemBench(b)
	opts.Mem = memory.NewGoAllocator()
	ds, err := Open(context.Background(), st, "lineitem/", opts)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(ds.BytesNeeded())
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := ds.Scan(context.Background())
		for s.Next() {
			s.Batch().Release()
		}
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

func BenchmarkScanAll(b *testing.B)        { benchScan(b, Options{}) }
func BenchmarkScanAllOneCore(b *testing.B) { benchScan(b, Options{Concurrency: 1}) }
func BenchmarkScanTwoColumns(b *testing.B) {
	benchScan(b, Options{Columns: []string{"l_orderkey", "l_extendedprice"}})
}
func BenchmarkScanFilter(b *testing.B) {
	benchScan(b, Options{Filter: "l_shipdate >= '1995-01-01' and l_discount < 0.05"})
}

// BenchmarkArrowGoRecordReader decodes the same files with arrow-go alone
// (its record reader over bytes in memory, one file at a time, files in
// parallel like the scan's workers): the decode-only reference the scan
// is compared with.
func BenchmarkArrowGoRecordReader(b *testing.B) {
	st := lineitemBench(b)
	objs, err := st.List(context.Background(), "lineitem/")
	if err != nil {
		b.Fatal(err)
	}
	var files [][]byte
	var total int64
	for _, o := range objs {
		data, err := st.ReadAll(context.Background(), o.Key)
		if err != nil {
			b.Fatal(err)
		}
		files = append(files, data)
		total += int64(len(data))
	}
	b.SetBytes(total)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		g, _ := errgroup.WithContext(context.Background())
		g.SetLimit(runtime.GOMAXPROCS(0))
		for _, data := range files {
			g.Go(func() error {
				mem := memory.NewGoAllocator()
				props := parquet.NewReaderProperties(mem)
				props.BufferedStreamEnabled = false
				pf, err := file.NewParquetReader(bytes.NewReader(data), file.WithReadProps(props))
				if err != nil {
					return err
				}
				fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: defaultBatchRows}, mem)
				if err != nil {
					return err
				}
				rr, err := fr.GetRecordReader(context.Background(), nil, nil)
				if err != nil {
					return err
				}
				defer rr.Release()
				for rr.Next() {
				}
				return rr.Err()
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}
