package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sys/unix"
)

// waitListening waits until a reader listens for the writer of pipe r.
func waitListening(t *testing.T, r *os.File) {
	t.Helper()
	name, ok := handoffName(r)
	if !ok {
		t.Fatal("not a pipe")
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile("/proc/net/unix")
		if err != nil {
			t.Skip("no /proc/net/unix:", err)
		}
		if bytes.Contains(b, []byte(name)) {
			return
		}
	}
	t.Fatal("the reader never listened")
}

// handoffRun writes src's stream to a pipe from one pipeline and reads it
// in another that applies stages, the reader started first so that the
// writer hands off; it returns the reader's output and both errors.
func handoffRun(t *testing.T, src SourceStage, writerStages []Stage, stages ...Stage) ([]byte, error, error) {
	t.Helper()
	t.Setenv("SLUICE_PIPE", "")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	readErr := make(chan error, 1)
	go func() {
		defer r.Close()
		readErr <- Run(context.Background(), Pipeline{Source: ReadIPC(r), Stages: append(stages, WriteIPC(&out))}, Options{Open: testOpen, Mem: checkedMem(t), Memory: 1 << 20})
	}()
	waitListening(t, r)
	werr := Run(context.Background(), Pipeline{Source: src, Stages: append(writerStages, WriteIPC(w))}, Options{Open: testOpen, Mem: checkedMem(t)})
	w.Close()
	rerr := <-readErr
	return out.Bytes(), werr, rerr
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
			before := handoffsTaken.Load()
			got, werr, rerr := handoffRun(t, tc.src(), nil, tc.stage)
			if werr != nil || rerr != nil {
				t.Fatalf("writer: %v, reader: %v", werr, rerr)
			}
			if handoffsTaken.Load() != before+1 {
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
	got, werr, rerr := handoffRun(t, src(), []Stage{none})
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
	_, werr, rerr := handoffRun(t, failingSource{b: b, n: 3, err: boom}, nil, Select("k"))
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
	got, werr, rerr := handoffRun(t, Scan([]string{taxi}, ScanOptions{BatchRows: 500}), nil, Head(3))
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

// TestHandoffFreeRanges: ranges come back merged with their neighbours,
// and the lowest free range is the one used next.
func TestHandoffFreeRanges(t *testing.T) {
	h := &handoffWriter{free: []extent{{0, 1 << 20}}, used: map[uint64]uint64{}}
	var offs []uint64
	for range 4 {
		off, ok := h.alloc(100) // 128 with alignment
		if !ok {
			t.Fatal("no room")
		}
		offs = append(offs, off)
	}
	if offs[3] != 3*handoffAlign*2 {
		t.Fatalf("offsets %v", offs)
	}
	h.release(offs[1])
	h.release(offs[2])
	if off, _ := h.alloc(200); off != offs[1] {
		t.Fatalf("got %d, want the merged range at %d", off, offs[1])
	}
	h.release(offs[0])
	h.release(offs[1])
	h.release(offs[3])
	if len(h.free) != 1 || h.free[0] != (extent{0, 1 << 20}) {
		t.Fatalf("free ranges %v, want all of it as one", h.free)
	}
	h.release(12345) // not handed out: ignored
	if len(h.free) != 1 {
		t.Fatalf("free ranges %v", h.free)
	}
}

// FuzzHandoffMessage: whatever a writer puts in the shared memory and
// says of it, parsing it is an error or a message, never a panic.
func FuzzHandoffMessage(f *testing.F) {
	mem := memory.NewGoAllocator()
	b := batch(&testing.T{}, mem, kvSchema, []any{"a", 1, 1.5}, []any{"b", 2, 2.5})
	stream := ipcOf(&testing.T{}, mem, b)
	b.Release()
	f.Add(stream, uint64(0), uint64(len(stream)))
	f.Add(stream, uint64(8), uint64(len(stream)-8))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 4, 0, 0, 0, 1, 2, 3, 4}, uint64(0), uint64(12))
	f.Fuzz(func(t *testing.T, shared []byte, off, length uint64) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Skip(err)
		}
		peer := os.NewFile(uintptr(fds[1]), "peer")
		defer peer.Close()
		fc, err := net.FileConn(os.NewFile(uintptr(fds[0]), "reader"))
		if err != nil {
			t.Fatal(err)
		}
		h := &handoffReader{c: fc.(*net.UnixConn), mem: shared}
		h.refs.Add(1)
		defer h.c.Close()
		msg, err := h.parse(off, length)
		if err != nil {
			return
		}
		msg.Release()
	})
}

// TestHandoffRefusesUnsealed: a memory file that could shrink under the
// reader is refused, so the reader cannot be made to fault.
func TestHandoffRefusesUnsealed(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := net.FileConn(os.NewFile(uintptr(fds[1]), "writer"))
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	rc, err := net.FileConn(os.NewFile(uintptr(fds[0]), "reader"))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, 1<<20); err != nil {
		t.Fatal(err)
	}
	hello := binary.LittleEndian.AppendUint64(append([]byte(nil), handoffHello...), 1<<20)
	if _, _, err := wc.(*net.UnixConn).WriteMsgUnix(hello, unix.UnixRights(fd), nil); err != nil {
		t.Fatal(err)
	}
	if h, err := acceptHandoff(rc.(*net.UnixConn)); err == nil {
		h.Close()
		t.Fatal("an unsealed memory file was taken")
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
