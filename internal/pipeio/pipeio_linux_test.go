package pipeio

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sys/unix"
)

// testStream is a small Arrow IPC stream: a schema and one batch.
func testStream(t testing.TB) []byte {
	schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}, {Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).AppendValues([]string{"a", "b"}, nil)
	b.Field(1).(*array.Int64Builder).AppendValues([]int64{1, 2}, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFreeRanges: ranges come back merged with their neighbours,
// and the lowest free range is the one used next.
func TestFreeRanges(t *testing.T) {
	h := &Writer{fd: -1, free: []extent{{0, 1 << 20}}, used: map[uint64]uint64{}}
	var offs []uint64
	for range 4 {
		off, ok := h.alloc(100) // 128 with alignment
		if !ok {
			t.Fatal("no room")
		}
		offs = append(offs, off)
	}
	if offs[3] != 3*align*2 {
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

// FuzzMessage: whatever a writer puts in the shared memory and
// says of it, parsing it is an error or a message, never a panic.
func FuzzMessage(f *testing.F) {
	stream := testStream(f)
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
		h := &reader{c: fc.(*net.UnixConn), mem: shared}
		h.refs.Add(1)
		defer h.c.Close()
		msg, err := h.parse(off, length)
		if err != nil {
			return
		}
		msg.Release()
	})
}

// TestRefusesUnsealed: a memory file that could shrink under the
// reader is refused, so the reader cannot be made to fault.
func TestRefusesUnsealed(t *testing.T) {
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
	hello := binary.LittleEndian.AppendUint64(append([]byte(nil), helloMagic...), 1<<20)
	if _, _, err := wc.(*net.UnixConn).WriteMsgUnix(hello, unix.UnixRights(fd), nil); err != nil {
		t.Fatal(err)
	}
	if h, err := accept(rc.(*net.UnixConn)); err == nil {
		h.Close()
		t.Fatal("an unsealed memory file was taken")
	}
}

// TestPunchesFreedRangesAboveKeep: a range freed above the resident part
// of the file gives its memory back; one below keeps it for the next
// message.
func TestPunchesFreedRangesAboveKeep(t *testing.T) {
	fd, err := unix.MemfdCreate("pipeio-test", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const size, keep = 64 << 20, 8 << 20
	if err := unix.Ftruncate(fd, size); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	allocated := func() int64 {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	h := &Writer{fd: fd, mem: mem, keep: keep, free: []extent{{0, size}}, used: map[uint64]uint64{}}
	var offs []uint64
	for range 4 { // 32 MiB written: 8 below keep, 24 above
		off, ok := h.alloc(8 << 20)
		if !ok {
			t.Fatal("no room")
		}
		for i := off; i < off+8<<20; i += pageSize {
			mem[i] = 1
		}
		offs = append(offs, off)
	}
	if got := allocated(); got < 32<<20 {
		t.Fatalf("%d bytes allocated after writing 32 MiB", got)
	}
	for _, off := range offs {
		h.release(off)
	}
	if got := allocated(); got < keep || got > keep+1<<20 {
		t.Fatalf("%d bytes allocated after freeing all, want the %d kept", got, keep)
	}
	if mem[keep+pageSize] != 0 || mem[0] != 1 {
		t.Fatal("punched pages do not read as zero, or kept ones lost their bytes")
	}
}
