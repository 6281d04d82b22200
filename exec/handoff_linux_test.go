package exec

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sys/unix"

	"github.com/sluice-data/sluice/internal/await"
	"github.com/sluice-data/sluice/internal/pipeio"
)

// listening reports whether a socket is bound to the pipe's name.
func listening(name string) bool {
	b, _ := os.ReadFile("/proc/net/unix")
	return bytes.Contains(b, []byte(name))
}

// needSocketList skips a test that looks for sockets where they are not
// listed.
func needSocketList(t *testing.T) {
	if _, err := os.Stat("/proc/net/unix"); err != nil {
		t.Skip("no /proc/net/unix:", err)
	}
}

// drained waits until the reader has read all that was written to pipe
// r: a reader that has read, if it hands off, has dialed.
func drained(t *testing.T, r *os.File) {
	t.Helper()
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	await.Until(t, "the reader to read the pipe", func() bool {
		n, err := -1, error(nil)
		rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }) // FIONREAD
		return err == nil && n == 0
	})
}

// handoffRun writes src's stream to a pipe from one pipeline and reads it
// in another that applies stages, both with Options.HandOff, the two
// started together; it returns the reader's output, both errors and
// whether the reader took the hand-off.
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
	werr := Run(context.Background(), Pipeline{Source: src, Stages: append(writerStages, WriteIPC(w))}, Options{Open: testOpen, Mem: checkedMem(t), HandOff: true})
	w.Close()
	rerr := <-readErr
	return out.Bytes(), werr, rerr, taken.Load()
}

// readPipe reads pipe r as a stage would, with Options.HandOff, into an
// IPC stream; the function it returns waits for the end and gives the
// stream, the error and whether the input went on through shared memory.
func readPipe(t *testing.T, r *os.File, handOff bool) func() ([]byte, error, bool) {
	var out bytes.Buffer
	var taken atomic.Bool
	done := make(chan error, 1)
	go func() {
		opts := Options{Open: testOpen, Mem: checkedMem(t), HandOff: handOff, HandedOff: func() { taken.Store(true) }}
		done <- Run(context.Background(), Pipeline{Source: ReadIPC(r), Stages: []Stage{WriteIPC(&out)}}, opts)
	}()
	return func() ([]byte, error, bool) {
		err := <-done
		return out.Bytes(), err, taken.Load()
	}
}

// kvBatches are n small batches of kvSchema.
func kvBatches(t *testing.T, mem memory.Allocator, n int) []arrow.RecordBatch {
	var recs []arrow.RecordBatch
	for i := range n {
		recs = append(recs, batch(t, mem, kvSchema, []any{"a", i, 1.5}, []any{nil, 2 * i, nil}))
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return recs
}

// kvStream is the IPC stream stages write for recs.
func kvStream(t *testing.T, recs []arrow.RecordBatch) []byte {
	var b bytes.Buffer
	sw := newStreamWriter(&b, kvSchema, streamOptions{})
	for _, r := range recs {
		if err := sw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestHandoffAfterPlainMessages: a writer that wrote several messages
// before its reader started reading still hands off the messages after
// the reader connects; the stream read is the stream written. The writer
// listens from before its first byte, and the reader dials once it has
// read one, so this does not depend on which starts first.
func TestHandoffAfterPlainMessages(t *testing.T) {
	mem := checkedMem(t)
	recs := kvBatches(t, mem, 6)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sw := newStreamWriter(w, kvSchema, streamOptions{Mem: mem, HandOff: true})
	defer sw.Abort()
	for _, rec := range recs[:3] { // the pipe holds them all, unread
		if err := sw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	wait := readPipe(t, r, true)
	drained(t, r)
	for i, rec := range recs[3:] {
		if err := sw.Write(rec); err != nil {
			t.Fatal(err)
		}
		if i == 0 && sw.pw.ho == nil {
			t.Error("the first batch written after the reader read went into the pipe")
		}
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, err, taken := wait()
	if err != nil {
		t.Fatal(err)
	}
	if !taken {
		t.Error("the reader took no hand-off")
	}
	if want := kvStream(t, recs); !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
	}
}

// TestHandoffWriterFailsAfterSwitch: a writer that fails once it hands
// off leaves the reader with an error, never a short result.
func TestHandoffWriterFailsAfterSwitch(t *testing.T) {
	mem := checkedMem(t)
	recs := kvBatches(t, mem, 2)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sw := newStreamWriter(w, kvSchema, streamOptions{Mem: mem, HandOff: true})
	if err := sw.Write(recs[0]); err != nil {
		t.Fatal(err)
	}
	wait := readPipe(t, r, true)
	drained(t, r)
	if err := sw.Write(recs[1]); err != nil {
		t.Fatal(err)
	}
	if sw.pw.ho == nil {
		t.Fatal("no hand-off")
	}
	sw.Abort()
	w.Close()
	_, err, taken := wait()
	if !taken || err == nil || !strings.Contains(err.Error(), "end-of-stream marker") {
		t.Fatalf("handed off %v, reader: %v, want the stream's end missing", taken, err)
	}
}

// TestHandoffPlainWriter: a stream that another writer put in the pipe
// (nothing listens) is read plain by a reader that would hand off.
func TestHandoffPlainWriter(t *testing.T) {
	mem := checkedMem(t)
	want := kvStream(t, kvBatches(t, mem, 3))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wait := readPipe(t, r, true)
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, err, taken := wait()
	if err != nil || taken {
		t.Fatalf("reader: %v, handed off %v", err, taken)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, want the %d written", len(got), len(want))
	}
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

// TestHandoffPlainForOtherReaders: a writer that would hand off, read
// by anything but a sluice stage (here the pipe's bytes as they are),
// writes a plain Arrow IPC stream that arrow-go's reader reads, with no
// switch marker in it; and it listened before its first byte.
func TestHandoffPlainForOtherReaders(t *testing.T) {
	needSocketList(t)
	taxi, _ := testData(t)
	want := piped(t, checkedMem(t), Scan([]string{taxi}, ScanOptions{BatchRows: 5000}))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	name, _ := pipeio.Name(r)
	type result struct {
		b         []byte
		listening bool
	}
	got := make(chan result, 1)
	go func() {
		first := make([]byte, 1)
		_, err := io.ReadFull(r, first)
		heard := err == nil && listening(name)
		rest, _ := io.ReadAll(r)
		got <- result{append(first, rest...), heard}
	}()
	if err := Run(context.Background(), Pipeline{Source: Scan([]string{taxi}, ScanOptions{BatchRows: 5000}), Stages: []Stage{WriteIPC(w)}}, Options{Open: testOpen, Mem: checkedMem(t), HandOff: true}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	res := <-got
	if !res.listening {
		t.Error("the writer did not listen by its first byte")
	}
	if !bytes.Equal(res.b, want) {
		t.Fatalf("%d bytes, want %d", len(res.b), len(want))
	}
	if bytes.Contains(res.b, pipeio.SwitchMarker[:]) {
		t.Fatal("the switch marker went to a reader that did not connect")
	}
	rd, err := ipc.NewReader(bytes.NewReader(res.b))
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

// TestNoHandOffUnlessAsked: a run without Options.HandOff (any library
// caller's) neither connects as a reader nor listens as a writer: the
// other end, which would hand off, finds no one, and the plain stream
// is read.
func TestNoHandOffUnlessAsked(t *testing.T) {
	taxi, _ := testData(t)
	src := func() SourceStage { return Scan([]string{taxi}, ScanOptions{BatchRows: 5000}) }
	want := piped(t, checkedMem(t), src())
	t.Run("reader", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		wait := readPipe(t, r, false)
		if err := Run(context.Background(), Pipeline{Source: src(), Stages: []Stage{WriteIPC(w)}}, Options{Open: testOpen, Mem: checkedMem(t), HandOff: true}); err != nil {
			t.Fatal(err)
		}
		w.Close()
		got, err, taken := wait()
		if err != nil || taken {
			t.Fatalf("reader: %v, handed off %v", err, taken)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes, want %d", len(got), len(want))
		}
	})
	t.Run("writer", func(t *testing.T) {
		needSocketList(t)
		mem := checkedMem(t)
		recs := kvBatches(t, mem, 2)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		name, _ := pipeio.Name(r)
		sw := newStreamWriter(w, kvSchema, streamOptions{Mem: mem})
		if err := sw.Write(recs[0]); err != nil {
			t.Fatal(err)
		}
		if listening(name) {
			t.Error("a writer not asked to hand off listens on the pipe's socket")
		}
		wait := readPipe(t, r, true)
		drained(t, r)
		if err := sw.Write(recs[1]); err != nil {
			t.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		got, err, taken := wait()
		if err != nil || taken {
			t.Fatalf("reader: %v, handed off %v", err, taken)
		}
		if want := kvStream(t, recs); !bytes.Equal(got, want) {
			t.Fatalf("%d bytes, want %d", len(got), len(want))
		}
	})
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
