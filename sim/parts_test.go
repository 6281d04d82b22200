package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/fidelity"
	"github.com/sluice-data/sluice/store"
)

// partsDriver is a driver whose writers send their bytes in requests of
// their own, as S3's multipart upload does: at Close, parts of partSize,
// inFlight at once, each through WriteOptions.Send, then into the inner
// driver.
type partsDriver struct {
	store.Driver
	partSize, inFlight int
	sends              chan int64 // every Send's length, as it is called
}

func (d *partsDriver) NewWriter(ctx context.Context, key string, opts store.WriteOptions) (store.DriverWriter, error) {
	return &partsWriter{d: d, ctx: ctx, key: key, opts: opts}, nil
}

type partsWriter struct {
	d    *partsDriver
	ctx  context.Context
	key  string
	opts store.WriteOptions
	buf  bytes.Buffer
	sent time.Time // when the last request was done
}

func (w *partsWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }
func (w *partsWriter) Abort() error                { return nil }
func (w *partsWriter) SendsRequests() bool         { return true }

func (w *partsWriter) Close() error {
	data := w.buf.Bytes()
	sem := make(chan struct{}, w.d.inFlight)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for off := 0; off < len(data); off += w.d.partSize {
		n := int64(min(w.d.partSize, len(data)-off))
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			w.d.sends <- n
			done, err := w.opts.Send(w.ctx, n)
			if err == nil {
				err = done()
			}
			mu.Lock()
			first = cmpOr(first, err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	w.sent = time.Now()
	if first != nil {
		return first
	}
	iw, err := w.d.Driver.NewWriter(w.ctx, w.key, store.WriteOptions{})
	if err != nil {
		return err
	}
	if _, err := iw.Write(data); err != nil {
		return err
	}
	return iw.Close()
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func newParts(partSize, inFlight, parts int) *partsDriver {
	return &partsDriver{Driver: store.NewMemDriver(), partSize: partSize, inFlight: inFlight, sends: make(chan int64, parts+1)}
}

// TestRequestWriterSendsEachPart: a writer that sends requests of its own
// is not paced as one stream; each request goes through Send, with its
// length, and a SlowDown fails the request before it is sent, so nothing
// is written.
func TestRequestWriterSendsEachPart(t *testing.T) {
	ctx := context.Background()
	for _, spec := range []string{"link=1GiB/s", "slowdown=1"} {
		d := newParts(1000, 3, 8)
		l := Wrap(d, mustParse(t, spec))
		w, err := l.NewWriter(ctx, "obj", store.WriteOptions{})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if _, ok := w.(*upload); ok {
			t.Fatalf("%s: a request writer is paced as one stream", spec)
		}
		if _, err := w.Write(make([]byte, 7500)); err != nil {
			t.Fatal(err)
		}
		err = w.Close()
		close(d.sends)
		var lens []int64
		for n := range d.sends {
			lens = append(lens, n)
		}
		if len(lens) != 8 {
			t.Errorf("%s: %d requests through Send, want 8 (7500 bytes in parts of 1000)", spec, len(lens))
		}
		_, serr := d.Stat(ctx, "obj")
		if spec == "slowdown=1" {
			if !errors.Is(err, store.ErrRetryable) {
				t.Errorf("%s: Close: %v, want a retryable SlowDown", spec, err)
			}
			if !errors.Is(serr, store.ErrNotFound) {
				t.Errorf("%s: the object was written: %v", spec, serr)
			}
		} else if err != nil || serr != nil {
			t.Errorf("%s: Close %v, Stat %v", spec, err, serr)
		}
	}
}

// TestFidelityParts: parts in flight together share the link as parallel
// reads do: min(parts x stream, link), within 10%, by wall clock.
func TestFidelityParts(t *testing.T) {
	fidelity.Require(t)
	p := mustParse(t, "stream=16MiB/s,link=40MiB/s,seed=1")
	for _, inFlight := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("parts=%d", inFlight), func(t *testing.T) {
			want := math.Min(float64(inFlight)*p.Stream, p.Link)
			const part = 2 << 20
			parts := int(want/part) + inFlight // about a second
			d := newParts(part, inFlight, parts)
			l := Wrap(d, p)
			w, err := l.NewWriter(context.Background(), "obj", store.WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(make([]byte, parts*part)); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := float64(parts*part) / w.(*partsWriter).sent.Sub(start).Seconds()
			t.Logf("%d parts in flight: %.2f MiB/s (want %.0f, %+.1f%%)", inFlight, got/MiB, want/MiB, 100*(got-want)/want)
			if !within(got, want, 0.10) {
				t.Errorf("%.2f MiB/s is not within 10%% of %.0f MiB/s", got/MiB, want/MiB)
			}
		})
	}
}
