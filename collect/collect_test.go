package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/internal/await"
	"github.com/sluice-data/sluice/internal/fidelity"
)

// stragglerPlan: producers parts of batches each; part slow takes
// slowDelay a batch, the others fastDelay.
func stragglerPlan(parts, batches, slow int, fastDelay, slowDelay time.Duration) *plan {
	p := &plan{batches: make([]int, parts)}
	for i := range p.batches {
		p.batches[i] = batches
	}
	p.delay = func(part, _ int) time.Duration {
		if part == slow {
			return slowDelay
		}
		return fastDelay
	}
	return p
}

// TestStraggler: one producer is 10x slower than the others. Arrival
// delivery holds at most two batches per producer; dataset order and the
// IPC file footer are exactly in order. In a fidelity run (package
// fidelity) arrival delivery also ends within 5 % of when the slowest
// producer ends, having overtaken it.
func TestStraggler(t *testing.T) {
	const parts, batches = 4, 20
	batchBytes := float64(measureBatch(t))
	for _, c := range []struct {
		slow         int
		consumerWait time.Duration
	}{{0, 0}, {2, 0}, {2, 3 * time.Millisecond}} {
		slow := c.slow
		for _, mode := range []string{"arrival", "dataset", "file"} {
			t.Run(fmt.Sprintf("slow=%d/consumer=%v/%s", slow, c.consumerWait, mode), func(t *testing.T) {
				mem := newPeakAllocator(t)
				p := stragglerPlan(parts, batches, slow, 3*time.Millisecond, 30*time.Millisecond)
				order := Arrival
				if mode == "dataset" {
					order = Dataset
				}
				start := time.Now()
				s := Collect(context.Background(), parts, p.producer(mem), Options{Order: order, Parallel: parts})
				var file bytes.Buffer
				var out []got
				var err error
				if mode == "file" {
					fw, ferr := NewSink(&file, format.IPCFile, testSchema, memory.NewGoAllocator())
					if ferr != nil {
						t.Fatal(ferr)
					}
					err = Drain(s, func(b Batch) error {
						time.Sleep(c.consumerWait) // a slow consumer: its pace is the input
						out = append(out, idOf(b.RecordBatch))
						return fw.Write(b)
					})
					if err == nil {
						err = fw.Close()
					}
				} else {
					err = Drain(s, func(b Batch) error {
						time.Sleep(c.consumerWait) // as above
						out = append(out, idOf(b.RecordBatch))
						return nil
					})
				}
				elapsed := time.Since(start)
				if err != nil {
					t.Fatal(err)
				}
				slowest := slices.Max(p.finished)
				peakBatches := float64(mem.peak.Load()) / batchBytes
				t.Logf("%s: delivered in %v, slowest producer done at %v (%.2f%%); peak %.1f batches (%d bytes) for %d producers; stream stats %+v",
					mode, elapsed.Round(time.Millisecond), slowest.Round(time.Millisecond),
					100*(float64(elapsed)/float64(slowest)-1), peakBatches, mem.peak.Load(), parts, s.Stats())
				want := inDatasetOrder(p.batches)
				if len(out) != len(want) {
					t.Fatalf("got %d batches, want %d", len(out), len(want))
				}
				switch mode {
				case "arrival", "file":
					// Timing claims: only in a fidelity run (see package fidelity).
					if fidelity.On() && c.consumerWait == 0 && float64(elapsed) > 1.05*float64(slowest) {
						t.Errorf("arrival delivery took %v, more than 5%% over the slowest producer's %v", elapsed, slowest)
					}
					if peakBatches > 2*parts {
						t.Errorf("peak %.1f batches, want at most %d (two per producer)", peakBatches, 2*parts)
					}
					if fidelity.On() && c.consumerWait == 0 && slices.Equal(out, want) {
						t.Errorf("arrival order equals dataset order: the straggler was not overtaken")
					}
				case "dataset":
					if !slices.Equal(out, want) {
						t.Errorf("dataset order broken: %v", out)
					}
					// head queue 2 + window 2P + one being made per producer + consumer's
					if limit := float64(2 + 2*parts + parts + 1); peakBatches > limit {
						t.Errorf("peak %.1f batches, want at most %.0f", peakBatches, limit)
					}
				}
				if mode == "file" {
					checkFile(t, file.Bytes(), want)
				}
			})
		}
	}
}

// measureBatch is the bytes one test batch allocates.
func measureBatch(t *testing.T) int64 {
	mem := newPeakAllocator(t)
	makeBatch(mem, 0, 0).Release()
	return mem.peak.Load()
}

// checkFile reads an IPC file with arrow-go and checks its batches come
// out in the order given.
func checkFile(t *testing.T, b []byte, want []got) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := ipc.NewFileReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Schema().Equal(testSchema) {
		t.Fatalf("schema %v", r.Schema())
	}
	if r.NumRecords() != len(want) {
		t.Fatalf("file has %d batches, want %d", r.NumRecords(), len(want))
	}
	for i := range r.NumRecords() {
		rec, err := r.RecordBatch(i)
		if err != nil {
			t.Fatal(err)
		}
		if g := idOf(rec); g != want[i] {
			t.Fatalf("file batch %d is %v, want %v", i, g, want[i])
		}
	}
}

// TestRandomDelays: many producers, random batch counts and delays, every
// order; each batch delivered once, and in order where asked.
func TestRandomDelays(t *testing.T) {
	for seed := range uint64(4) {
		for _, mode := range []string{"arrival", "dataset", "file"} {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, mode), func(t *testing.T) {
				mem := newPeakAllocator(t)
				rng := rand.New(rand.NewPCG(seed, 1))
				p := randomPlan(rng, 40, 8, 3*time.Millisecond)
				opts := Options{Parallel: 1 + int(seed)*3, Window: 1 + int(seed)}
				if mode == "dataset" {
					opts.Order = Dataset
				}
				s := Collect(context.Background(), len(p.batches), p.producer(mem), opts)
				var file bytes.Buffer
				fw, err := NewSink(&file, format.IPCFile, testSchema, memory.NewGoAllocator())
				if err != nil {
					t.Fatal(err)
				}
				var out []got
				err = Drain(s, func(b Batch) error {
					out = append(out, idOf(b.RecordBatch))
					return fw.Write(b)
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := fw.Close(); err != nil {
					t.Fatal(err)
				}
				want := inDatasetOrder(p.batches)
				if mode == "dataset" {
					if !slices.Equal(out, want) {
						t.Fatalf("out of order: %v", out)
					}
				} else {
					sorted := slices.Clone(out)
					slices.SortFunc(sorted, func(a, b got) int {
						if a.part != b.part {
							return a.part - b.part
						}
						return a.batch - b.batch
					})
					if !slices.Equal(sorted, want) {
						t.Fatalf("batches lost or repeated: %v", out)
					}
				}
				checkFile(t, file.Bytes(), want)
			})
		}
	}
}

// TestEmpty: no parts, or parts with no batches, give an empty stream and
// a valid IPC file with the schema and no batch.
func TestEmpty(t *testing.T) {
	for _, parts := range []int{0, 3} {
		for _, order := range []Order{Arrival, Dataset} {
			t.Run(fmt.Sprintf("parts=%d/%v", parts, order), func(t *testing.T) {
				mem := newPeakAllocator(t)
				p := &plan{batches: make([]int, parts)}
				s := Collect(context.Background(), parts, p.producer(mem), Options{Order: order})
				var file bytes.Buffer
				sink, err := NewSink(&file, format.IPCFile, testSchema, mem)
				if err != nil {
					t.Fatal(err)
				}
				if err := WriteStream(s, sink); err != nil {
					t.Fatal(err)
				}
				checkFile(t, file.Bytes(), nil)
			})
		}
	}
}

var errInjected = errors.New("injected failure")

// TestErrorMidStream: an error at each stage of delivery ends the stream
// with that error, releases everything and stops every producer.
func TestErrorMidStream(t *testing.T) {
	const parts, batches = 6, 5
	stages := []struct {
		name string
		fail func(part, batch int) error
	}{
		{"before any batch", func(part, batch int) error {
			if part == 0 && batch == 0 {
				return errInjected
			}
			return nil
		}},
		{"head part mid-way", func(part, batch int) error {
			if part == 0 && batch == 2 {
				return errInjected
			}
			return nil
		}},
		{"later part mid-way", func(part, batch int) error {
			if part == 4 && batch == 3 {
				return errInjected
			}
			return nil
		}},
		{"after the last batch of a part", func(part, batch int) error {
			if part == 3 && batch == batches {
				return errInjected
			}
			return nil
		}},
		{"after the last batch of the last part", func(part, batch int) error {
			if part == parts-1 && batch == batches {
				return errInjected
			}
			return nil
		}},
		{"panic", func(part, batch int) error {
			if part == 2 && batch == 1 {
				panic(errInjected)
			}
			return nil
		}},
	}
	for _, st := range stages {
		for _, mode := range []string{"arrival", "dataset", "file", "parquet", "stream"} {
			t.Run(st.name+"/"+mode, func(t *testing.T) {
				mem := newPeakAllocator(t)
				p := stragglerPlan(parts, batches, 0, time.Millisecond, 3*time.Millisecond)
				p.fail = st.fail
				opts := Options{Parallel: 3, Window: 2}
				if mode == "dataset" || mode == "parquet" || mode == "stream" {
					opts.Order = Dataset
				}
				s := Collect(context.Background(), parts, p.producer(mem), opts)
				var err error
				var out bytes.Buffer
				switch mode {
				case "arrival", "dataset":
					_, err = drain(t, s)
				default:
					f := map[string]format.Format{"file": format.IPCFile, "parquet": format.Parquet, "stream": format.IPCStream}[mode]
					sink, serr := NewSink(&out, f, testSchema, mem)
					if serr != nil {
						t.Fatal(serr)
					}
					err = WriteStream(s, sink)
				}
				if !errors.Is(err, errInjected) {
					t.Fatalf("err = %v, want the injected failure", err)
				}
				if st.name == "panic" {
					// The panic's stack is kept for whoever reports it;
					// the message stays one line.
					var pe *PanicError
					if !errors.As(err, &pe) || !bytes.Contains(pe.Stack, []byte("collect_test.go")) || strings.Contains(err.Error(), "\n") {
						t.Errorf("err = %v, want a one-line *PanicError with the stack of the panic", err)
					}
				}
				if mode == "file" {
					if _, rerr := ipc.NewFileReader(bytes.NewReader(out.Bytes())); rerr == nil {
						t.Errorf("an aborted IPC file reads as a valid file (%d bytes)", out.Len())
					}
				}
				if mode == "stream" {
					r, rerr := ipc.NewReader(bytes.NewReader(out.Bytes()))
					if rerr == nil {
						for r.Next() {
						}
						rerr = r.Err()
						r.Release()
					}
					// A stream cut before its end-of-stream marker reads
					// as io.EOF-ended; what matters is no marker was written.
					if bytes.HasSuffix(out.Bytes(), []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) {
						t.Errorf("an aborted IPC stream has its end-of-stream marker (reader err %v)", rerr)
					}
				}
			})
		}
	}
}

// TestConsumerError: the consumer failing (a sink that cannot write)
// stops the producers and releases what they queued.
func TestConsumerError(t *testing.T) {
	for _, order := range []Order{Arrival, Dataset} {
		t.Run(order.String(), func(t *testing.T) {
			mem := newPeakAllocator(t)
			p := stragglerPlan(8, 50, 1, 0, time.Millisecond)
			s := Collect(context.Background(), 8, p.producer(mem), Options{Order: order, Parallel: 4})
			n := 0
			err := Drain(s, func(Batch) error {
				if n++; n == 7 {
					return errInjected
				}
				return nil
			})
			if !errors.Is(err, errInjected) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// waitFull waits until every producer of s still running waits for room:
// the window (or the arrival queue) is full.
func waitFull[T Item](t *testing.T, s *Flow[T]) {
	t.Helper()
	await.Until(t, "the producers to fill the window", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.running > 0 && s.waiting == s.running
	})
}

// TestCancel: a consumer that stops early (Close) or whose context is
// cancelled stops every producer, even those waiting for room; goleak
// (TestMain) and the checked allocator see nothing left.
func TestCancel(t *testing.T) {
	for _, order := range []Order{Arrival, Dataset} {
		t.Run("close/"+order.String(), func(t *testing.T) {
			defer goleak.VerifyNone(t)
			mem := newPeakAllocator(t)
			p := stragglerPlan(16, 100, 0, 0, 5*time.Millisecond)
			s := Collect(context.Background(), 16, p.producer(mem), Options{Order: order, Parallel: 4, Window: 3})
			for range 3 {
				if !s.Next() {
					t.Fatalf("stream ended early: %v", s.Err())
				}
				s.Batch().Release()
			}
			waitFull(t, s)
			s.Close()
			if s.Next() {
				t.Fatal("Next after Close")
			}
			if err := s.Err(); err != nil {
				t.Fatalf("Err after Close = %v, want nil", err)
			}
		})
		t.Run("context/"+order.String(), func(t *testing.T) {
			defer goleak.VerifyNone(t)
			mem := newPeakAllocator(t)
			p := stragglerPlan(16, 100, 0, 0, 5*time.Millisecond)
			ctx, cancel := context.WithCancel(context.Background())
			s := Collect(ctx, 16, p.producer(mem), Options{Order: order, Parallel: 4, Window: 3})
			waitFull(t, s)
			cancel()
			_, err := drain(t, s)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		})
	}
}
