package sim

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/fidelity"
	"github.com/sluice-data/sluice/store"
)

// fidelitySpec is the s3 profile with its bandwidth scaled down so the
// whole test takes a few seconds on a busy 2-core machine (link = 2.5
// streams, so 1 and 2 streams are stream-bound, 4 and 8 link-bound). The
// first-byte figures are s3's own: scaling them down too would measure Go's
// timer overshoot (0.2-0.5ms on a loaded machine) rather than the model.
const fidelitySpec = "ttfb=15ms,p99=80ms,stream=16MiB/s,link=40MiB/s,seed=1"

// TestFidelity measures what the model delivers, by wall clock, against
// what the profile asks for: throughput of 1..8 streams against
// min(n x stream, link) within 10%, and time to first byte against the
// log-normal's median (10%) and 99th percentile (25%).
func TestFidelity(t *testing.T) {
	fidelity.Require(t)
	p := mustParse(t, fidelitySpec)
	inner := store.NewMemDriver()
	const objSize = 16 << 20
	put(t, inner, "big", objSize)
	put(t, inner, "small", 1024)
	t.Logf("profile %s", p)

	t.Run("ttfb", func(t *testing.T) {
		d := Wrap(inner, p)
		const requests, parallel = 2000, 50
		lat := make([]time.Duration, requests)
		var wg sync.WaitGroup
		next := make(chan int)
		errs := make(chan error, parallel)
		for range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 2048)
				for i := range next {
					start := time.Now()
					rc, _, err := d.ReadRange(context.Background(), "small", store.All(), store.ReadOptions{})
					if err != nil {
						errs <- err
						return
					}
					_, err = io.ReadAtLeast(rc, buf, 1)
					lat[i] = time.Since(start)
					rc.Close()
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		for i := range requests {
			next <- i
		}
		close(next)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		p50, p99 := quantile(lat, 0.5), quantile(lat, 0.99)
		t.Logf("first byte over %d reads, %d at once: p50 %v (want %v, %+.1f%%)  p99 %v (want %v, %+.1f%%)",
			requests, parallel, p50.Round(10*time.Microsecond), p.TTFB, pct(p50, p.TTFB),
			p99.Round(10*time.Microsecond), p.TTFBP99, pct(p99, p.TTFBP99))
		if !within(float64(p50), float64(p.TTFB), 0.10) {
			t.Errorf("first-byte p50 %v is not within 10%% of %v", p50, p.TTFB)
		}
		if !within(float64(p99), float64(p.TTFBP99), 0.25) {
			t.Errorf("first-byte p99 %v is not within 25%% of %v", p99, p.TTFBP99)
		}
	})

	for _, streams := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("streams=%d", streams), func(t *testing.T) {
			d := Wrap(inner, p) // a fresh, idle link
			want := math.Min(float64(streams)*p.Stream, p.Link)
			// About one second of transfer in all; the wall time includes
			// the first-byte wait (15ms median), about 1.5% of it.
			per := int64(want / float64(streams))
			per = min(per, objSize)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var total int64
			var firstErr error
			perStream := make([]float64, streams)
			start := time.Now()
			for s := range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n, err := readRange(d, "big", store.Range{Off: 0, Len: per})
					mu.Lock()
					defer mu.Unlock()
					total += n
					perStream[s] = float64(n) / time.Since(start).Seconds()
					if err != nil && firstErr == nil {
						firstErr = err
					}
				}()
			}
			wg.Wait()
			wall := time.Since(start)
			if firstErr != nil {
				t.Fatal(firstErr)
			}
			if total != per*int64(streams) {
				t.Fatalf("read %d bytes, want %d", total, per*int64(streams))
			}
			got := float64(total) / wall.Seconds()
			t.Logf("%d stream(s): %6.2f MiB/s in %v (want min(%d x %.0f, %.0f) = %.0f MiB/s, %+.1f%%); per stream %.2f..%.2f MiB/s",
				streams, got/MiB, wall.Round(time.Millisecond), streams, p.Stream/MiB, p.Link/MiB, want/MiB,
				100*(got-want)/want, slices.Min(perStream)/MiB, slices.Max(perStream)/MiB)
			if !within(got, want, 0.10) {
				t.Errorf("%d streams: %.2f MiB/s is not within 10%% of %.0f MiB/s", streams, got/MiB, want/MiB)
			}
		})
	}
}

func readRange(d store.Driver, key string, r store.Range) (int64, error) {
	rc, _, err := d.ReadRange(context.Background(), key, r, store.ReadOptions{})
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	return io.CopyBuffer(io.Discard, rc, make([]byte, 256<<10))
}

// quantile is the q-th sample quantile (nearest rank) of xs; xs is sorted.
func quantile(xs []time.Duration, q float64) time.Duration {
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(i, 0)]
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }

func pct(got, want time.Duration) float64 { return 100 * float64(got-want) / float64(want) }
