package scanbench

import (
	"context"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

// The scan path over a small lineitem dataset (about 16 MiB in 2 files of
// 4 row groups), in memory, with and without a link in front: MiB/s is of
// file bytes, as in the command. Compare runs with benchstat.

var small struct {
	once  sync.Once
	local *store.Store
	objs  []object
	bytes int64
	err   error
}

func smallDataset(b *testing.B) (*store.Store, int64) {
	small.once.Do(func() {
		small.local = store.New(store.NewMemDriver(), "mem://scanbench-small/")
		res, err := gen.Lineitem(context.Background(), small.local, "li/", gen.Options{Rows: 500_000, Files: 2})
		if err != nil {
			small.err = err
			return
		}
		for _, f := range res.Files {
			small.objs = append(small.objs, object{key: f.Key, size: f.Bytes})
		}
		small.bytes = res.Bytes
	})
	if small.err != nil {
		b.Fatal(small.err)
	}
	return small.local, small.bytes
}

func shapedBy(b *testing.B, st *store.Store, spec string) *store.Store {
	if spec == "" {
		return st
	}
	p, err := sim.Parse(spec)
	if err != nil {
		b.Fatal(err)
	}
	return store.New(sim.Wrap(st.Driver(), p), "mem://scanbench-small/")
}

func BenchmarkScan(b *testing.B) {
	local, size := smallDataset(b)
	for _, c := range []struct {
		name, link string
		columns    []string
	}{
		{"all/memory", "", nil},
		{"all/link=400MiB", "ttfb=2ms,stream=90MiB/s,link=400MiB/s", nil},
		{"two-columns/memory", "", []string{"l_orderkey", "l_extendedprice"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			st := shapedBy(b, local, c.link)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				res, err := runScan(context.Background(), st, "li/", scan.Options{Columns: c.columns}, false)
				if err != nil {
					b.Fatal(err)
				}
				if res.Rows != 500_000 {
					b.Fatalf("%d rows", res.Rows)
				}
			}
		})
	}
}

// BenchmarkDecodeOnly is the ceiling of BenchmarkScan/all/memory: the
// same row groups scanned from file bytes already in memory, and, as the
// reference, decoded by arrow-go's record reader.
func BenchmarkDecodeOnly(b *testing.B) {
	local, size := smallDataset(b)
	m, err := load(context.Background(), local, small.objs)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			s, err := decodeOnly(context.Background(), m, "li/", scan.Options{BatchRows: 64 << 10})
			if err != nil || s.Rows != 500_000 {
				b.Fatal(s.Rows, err)
			}
		}
	})
	b.Run("arrow-go", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			if _, rows, err := arrowGoOnly(context.Background(), m, 64<<10, memory.DefaultAllocator); err != nil || rows != 500_000 {
				b.Fatal(rows, err)
			}
		}
	})
}

// BenchmarkNaive is arrow-go over store.ReaderAt, two files at once.
func BenchmarkNaive(b *testing.B) {
	local, size := smallDataset(b)
	st := shapedBy(b, local, "ttfb=2ms,stream=90MiB/s,link=400MiB/s")
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, rows, err := naive(context.Background(), st, small.objs, nil, 2, 64<<10, memory.DefaultAllocator); err != nil || rows != 500_000 {
			b.Fatal(rows, err)
		}
	}
}
