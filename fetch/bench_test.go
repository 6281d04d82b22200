package fetch

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// benchLink is a link with a small first byte and a per-stream cap, the
// regime where one request at a time leaves most of the link idle.
const benchLink = "ttfb=5ms,p99=20ms,stream=64MiB/s"

const (
	benchObjects = 16
	benchSize    = 4 << 20
)

func benchStore(b *testing.B) (*store.Store, []string) {
	st, inner := testStore(b, benchLink)
	var keys []string
	for i := range benchObjects {
		key := fmt.Sprintf("obj-%02d", i)
		put(b, inner, key, benchSize, uint64(i))
		keys = append(keys, key)
	}
	return st, keys
}

// Plain sequential ReadAt: one whole-object read at a time, the way a
// reader without a scheduler goes through a list of files.
func BenchmarkSequentialReadAt(b *testing.B) {
	st, keys := benchStore(b)
	ctx := context.Background()
	var readers []*store.ReaderAt
	for _, k := range keys {
		r, err := st.NewReaderAt(ctx, k)
		if err != nil {
			b.Fatal(err)
		}
		readers = append(readers, r)
	}
	buf := make([]byte, benchSize)
	b.SetBytes(benchObjects * benchSize)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, r := range readers {
			if _, err := r.ReadAt(buf, 0); err != nil && err != io.EOF {
				b.Fatal(err)
			}
		}
	}
}

// The same objects through one Fetcher (kept across iterations, as in a
// long job): whole objects as units, and as 1 MiB windows the way cat
// streams them.
func BenchmarkFetch(b *testing.B) {
	for _, tc := range []struct {
		name   string
		window int64
	}{{"whole", benchSize}, {"windows-1MiB", 1 << 20}} {
		b.Run(tc.name, func(b *testing.B) {
			st, keys := benchStore(b)
			var reqs []Request
			for _, k := range keys {
				reqs = append(reqs, windows(k, benchSize, tc.window)...)
			}
			f := New(st, Options{})
			ctx := context.Background()
			b.SetBytes(benchObjects * benchSize)
			b.ReportAllocs()
			b.ResetTimer()
			var last Stats
			for b.Loop() {
				p := f.Plan(ctx, reqs)
				for {
					u, err := p.Next(ctx)
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if _, err := u.WriteTo(io.Discard); err != nil {
						b.Fatal(err)
					}
					u.Release()
				}
				last = p.Stats()
				p.Close()
			}
			b.ReportMetric(float64(last.InFlightMax), "inflight")
		})
	}
}
