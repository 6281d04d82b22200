package exec

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/sluice-data/sluice/internal/await"
	"github.com/sluice-data/sluice/internal/pipeio"
)

// waitListening waits until a reader listens for the writer of pipe r.
func waitListening(t *testing.T, r *os.File) {
	t.Helper()
	name, ok := pipeio.Name(r)
	if !ok {
		t.Fatal("not a pipe")
	}
	if _, err := os.Stat("/proc/net/unix"); err != nil {
		t.Skip("no /proc/net/unix:", err)
	}
	await.Until(t, "the reader to listen", func() bool { return listening(name) })
}

// listening reports whether a socket is bound to the pipe's name.
func listening(name string) bool {
	b, _ := os.ReadFile("/proc/net/unix")
	return bytes.Contains(b, []byte(name))
}

// parkedReading reports whether a ReadIPC on a pipe is blocked opening
// its source, reading the pipe or awaiting a hand-off: either way it has
// passed the point where it would listen.
func parkedReading() bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		blocked := strings.Contains(head, "[IO wait") || strings.Contains(head, "[select") || strings.Contains(head, "[chan receive")
		if blocked && strings.Contains(g, "exec.ipcSourceStage.open(") {
			return true
		}
	}
	return false
}

// handoffRun writes src's stream to a pipe from one pipeline and reads it
// in another that applies stages, both with Options.HandOff, the reader
// started first so that the writer hands off; it returns the reader's
// output, both errors and whether the reader took the hand-off.
func handoffRun(t *testing.T, src SourceStage, writerStages []Stage, stages ...Stage) ([]byte, error, error, bool) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var taken atomic.Bool
	readErr := make(chan error, 1)
	go func() {
		defer r.Close()
		opts := Options{Open: testOpen, Mem: checkedMem(t), Memory: 1 << 20, HandOff: true, HandedOff: func() { taken.Store(true) }}
		readErr <- Run(context.Background(), Pipeline{Source: ReadIPC(r), Stages: append(stages, WriteIPC(&out))}, opts)
	}()
	waitListening(t, r)
	werr := Run(context.Background(), Pipeline{Source: src, Stages: append(writerStages, WriteIPC(w))}, Options{Open: testOpen, Mem: checkedMem(t), HandOff: true})
	w.Close()
	rerr := <-readErr
	return out.Bytes(), werr, rerr, taken.Load()
}

// TestHandoffSameAsPipe: batches handed off through shared memory give
// the stream the plain pipe gives, for stages that keep their input
// (sort), drop it (agg-by) and pass it on (filter), with dictionaries.
func TestHandoffSameAsPipe(t *testing.T) {
	taxi, lineitem := testData(t)
	must := mustStage(t)
	for _, tc := range []struct {
		name  string
		src   func() SourceStage
		stage Stage
	}{
		{"filter", func() SourceStage { return Scan([]string{taxi}, ScanOptions{BatchRows: 7000}) }, must(Filter("trip_distance > 1"))},
		{"sort", func() SourceStage { return Scan([]string{taxi}, ScanOptions{BatchRows: 5000}) }, Sort([]SortKey{{Column: "trip_distance"}})},
		{"dict", func() SourceStage {
			return Scan([]string{lineitem}, ScanOptions{Dict: []string{"l_returnflag", "l_linestatus"}})
		}, Select("l_returnflag", "l_linestatus", "l_quantity", "l_shipdate")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := piped(t, checkedMem(t), tc.src(), tc.stage)
			got, werr, rerr, taken := handoffRun(t, tc.src(), nil, tc.stage)
			if werr != nil || rerr != nil {
				t.Fatalf("writer: %v, reader: %v", werr, rerr)
			}
			if !taken {
				t.Fatal("the reader took no hand-off")
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("handed off: %d bytes, want the %d of the in-memory run", len(got), len(want))
			}
		})
	}
}

// TestHandoffEmpty: an empty result handed off is an empty stream with
// its schema, not an error.
func TestHandoffEmpty(t *testing.T) {
	taxi, _ := testData(t)
	src := func() SourceStage { return Scan([]string{taxi}, ScanOptions{}) }
	none := mustStage(t)(Filter("trip_distance < -1"))
	want := piped(t, checkedMem(t), src(), none)
	got, werr, rerr, _ := handoffRun(t, src(), []Stage{none})
	if werr != nil || rerr != nil {
		t.Fatalf("writer: %v, reader: %v", werr, rerr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%d bytes, want %d", len(got), len(want))
	}
}

// TestHandoffWriterFails: a writer that fails mid-stream leaves the
// reader with an error, never a short result.
func TestHandoffWriterFails(t *testing.T) {
	mem := checkedMem(t)
	b := batch(t, mem, kvSchema, []any{"a", 1, 1.5}, []any{"b", 2, 2.5})
	defer b.Release()
	boom := errors.New("boom")
	_, werr, rerr, _ := handoffRun(t, failingSource{b: b, n: 3, err: boom}, nil, Select("k"))
	if !errors.Is(werr, boom) {
		t.Fatalf("writer: %v, want boom", werr)
	}
	if rerr == nil || !strings.Contains(rerr.Error(), "end-of-stream marker") {
		t.Fatalf("reader: %v, want the stream's end missing", rerr)
	}
}

// TestHandoffReaderStops: a reader that stops early (head) ends the
// writer as a closed pipe does: with EPIPE, which stages take quietly.
func TestHandoffReaderStops(t *testing.T) {
	taxi, _ := testData(t)
	got, werr, rerr, _ := handoffRun(t, Scan([]string{taxi}, ScanOptions{BatchRows: 500}), nil, Head(3))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if werr != nil && !errors.Is(werr, syscall.EPIPE) {
		t.Fatalf("writer: %v, want nil or EPIPE", werr)
	}
	rd, err := ipc.NewReader(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	rows := 0
	for rd.Next() {
		rows += int(rd.RecordBatch().NumRows())
	}
	if rows != 3 {
		t.Fatalf("%d rows, want 3", rows)
	}
}

// TestHandoffPlainForOtherReaders: with no sluice stage listening, the
// pipe carries a plain Arrow IPC stream that arrow-go's reader reads.
func TestHandoffPlainForOtherReaders(t *testing.T) {
	taxi, _ := testData(t)
	want := piped(t, checkedMem(t), Scan([]string{taxi}, ScanOptions{}))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	if err := Run(context.Background(), Pipeline{Source: Scan([]string{taxi}, ScanOptions{}), Stages: []Stage{WriteIPC(w)}}, Options{Open: testOpen, Mem: checkedMem(t)}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b := <-got
	if !bytes.Equal(b, want) {
		t.Fatalf("%d bytes, want %d", len(b), len(want))
	}
	rd, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	for rd.Next() {
	}
	if rd.Err() != nil {
		t.Fatal(rd.Err())
	}
}

// TestNoHandOffUnlessAsked: a ReadIPC on a pipe in a run without
// Options.HandOff (any library caller's) opens no socket: a writer that
// would hand off finds no one and writes the plain stream, which the
// reader reads.
func TestNoHandOffUnlessAsked(t *testing.T) {
	taxi, _ := testData(t)
	want := piped(t, checkedMem(t), Scan([]string{taxi}, ScanOptions{}))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	name, _ := pipeio.Name(r)
	var out bytes.Buffer
	readErr := make(chan error, 1)
	go func() {
		defer r.Close()
		readErr <- Run(context.Background(), Pipeline{Source: ReadIPC(r), Stages: []Stage{WriteIPC(&out)}}, Options{Open: testOpen, Mem: checkedMem(t)})
	}()
	// Once the reader waits for its first bytes, it would be listening.
	await.Until(t, "the reader to wait for its first bytes", parkedReading)
	if listening(name) {
		t.Fatal("a reader not asked to hand off listens on the pipe's socket")
	}
	if err := Run(context.Background(), Pipeline{Source: Scan([]string{taxi}, ScanOptions{}), Stages: []Stage{WriteIPC(w)}}, Options{Open: testOpen, Mem: checkedMem(t), HandOff: true}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("%d bytes, want %d", out.Len(), len(want))
	}
}

// failingSource gives batch b n times, then fails with err.
type failingSource struct {
	b   arrow.RecordBatch
	n   int
	err error
}

func (failingSource) Name() string { return "failing" }

func (s failingSource) open(context.Context, *env) (Source, error) {
	return &failingSourceRun{failingSource: s}, nil
}

type failingSourceRun struct {
	failingSource
	i int
}

func (s *failingSourceRun) Schema() *arrow.Schema { return s.b.Schema() }

func (s *failingSourceRun) Next(context.Context) (arrow.RecordBatch, error) {
	if s.i++; s.i > s.n {
		return nil, s.err
	}
	s.b.Retain()
	return s.b, nil
}

func (s *failingSourceRun) Close() error { return nil }
