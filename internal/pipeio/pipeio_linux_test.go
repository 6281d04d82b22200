package pipeio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

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
		peer, rc := socketpair(t)
		defer peer.Close()
		h := &reader{c: rc, mem: shared}
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

// messages splits an IPC stream into its messages' bytes, the
// end-of-stream marker left out.
func messages(t testing.TB, stream []byte) [][]byte {
	r := bytes.NewReader(stream)
	mr := ipc.NewMessageReader(r)
	defer mr.Release()
	var out [][]byte
	at := 0
	for {
		if _, err := mr.Message(); err != nil {
			break
		}
		end := len(stream) - r.Len()
		out = append(out, stream[at:end])
		at = end
	}
	return out
}

// pipe is a pipe whose ends close with the test.
func pipe(t *testing.T) (r, w *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// socketpair is a connected pair of SOCK_SEQPACKET sockets, as the
// writer's and the reader's ends of a hand-off.
func socketpair(t testing.TB) (w, r *net.UnixConn) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skip(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "hand-off")
		defer f.Close() // FileConn holds a copy
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		return c.(*net.UnixConn)
	}
	return conn(fds[1]), conn(fds[0])
}

// writeTo is Switch's pipe argument for w.
func writeTo(w *os.File) func([]byte) error {
	return func(b []byte) error { _, err := w.Write(b); return err }
}

// TestSwitch: messages the writer put in the pipe before its reader
// connected are read from the pipe, the switch marker follows them, and
// every message after it comes through shared memory, to the end.
func TestSwitch(t *testing.T) {
	msgs := messages(t, testStream(t)) // the schema and a batch
	r, w := pipe(t)
	hl := Listen(w)
	if hl == nil {
		t.Fatal("no listener")
	}
	defer hl.Close()
	if h, err := hl.Switch(writeTo(w)); h != nil || err != nil {
		t.Fatalf("switched with no reader: %v, %v", h, err)
	}
	for _, m := range msgs { // written before the reader reads
		w.Write(m)
	}
	first := make([]byte, len(msgs[0])+len(msgs[1]))
	if _, err := io.ReadFull(r, first[:1]); err != nil {
		t.Fatal(err)
	}
	hc := Dial(r)
	if hc == nil {
		t.Fatal("the reader found no writer listening after reading its first byte")
	}
	const after = 3
	werr := make(chan error, 1)
	go func() {
		h, err := hl.Switch(writeTo(w))
		if h == nil || err != nil {
			werr <- fmt.Errorf("no hand-off: %v", err)
			return
		}
		defer h.Close()
		for range after {
			if err := h.Write([][]byte{msgs[1]}); err != nil {
				werr <- err
				return
			}
		}
		werr <- h.End()
	}()
	if _, err := io.ReadFull(r, first[1:]); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, append(append([]byte(nil), msgs[0]...), msgs[1]...)) {
		t.Fatal("the pipe's messages before the switch are not those written")
	}
	var marker [8]byte
	if _, err := io.ReadFull(r, marker[:]); err != nil || marker != SwitchMarker {
		t.Fatalf("read %x, %v, want the switch marker", marker, err)
	}
	mr := hc.Take()
	if mr == nil {
		t.Fatal("the reader refused the hello")
	}
	defer mr.Release()
	n := 0
	for {
		msg, err := mr.Message()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if msg.Type() != ipc.MessageRecordBatch {
			t.Fatalf("message %d is a %v", n, msg.Type())
		}
		n++
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if n != after {
		t.Fatalf("%d messages through shared memory, want %d", n, after)
	}
}

// TestSwitchRefused: a reader that answers anything but OK, or goes,
// leaves the writer writing on in the pipe, after the marker.
func TestSwitchRefused(t *testing.T) {
	for _, answer := range []string{"NO", ""} {
		r, w := pipe(t)
		hl := Listen(w)
		w.Write([]byte{1})
		r.Read(make([]byte, 1))
		hc := Dial(r)
		if hc == nil {
			t.Fatal("no writer listening")
		}
		got := make(chan *Writer, 1)
		go func() {
			h, err := hl.Switch(writeTo(w))
			if err != nil {
				t.Error(err)
			}
			got <- h
		}()
		var marker [8]byte
		if _, err := io.ReadFull(r, marker[:]); err != nil || marker != SwitchMarker {
			t.Fatalf("read %x, %v, want the switch marker", marker, err)
		}
		if answer == "" {
			hc.Close()
		} else {
			hc.c.Write([]byte(answer))
		}
		if h := <-got; h != nil {
			t.Fatalf("answer %q: switched", answer)
		}
		if h, _ := hl.Switch(writeTo(w)); h != nil {
			t.Fatal("a second switch")
		}
		hc.Close()
	}
}

// TestTakeRefusesBadHello: a reader that cannot take the hello answers
// so, and the stream goes on in the pipe.
func TestTakeRefusesBadHello(t *testing.T) {
	wc, rc := socketpair(t)
	defer wc.Close()
	if _, err := wc.Write([]byte("SLUICE0\x00 no file")); err != nil {
		t.Fatal(err)
	}
	if mr := (&Conn{c: rc}).Take(); mr != nil {
		mr.Release()
		t.Fatal("a bad hello was taken")
	}
	ans := make([]byte, 8)
	n, _ := wc.Read(ans)
	if string(ans[:n]) != "NO" {
		t.Fatalf("answer %q, want NO", ans[:n])
	}
}

// TestOneListenerPerPipe: a second writer of the same pipe does not
// listen, and a reader dialing a writer that is done finds no one.
func TestOneListenerPerPipe(t *testing.T) {
	r, w := pipe(t)
	hl := Listen(w)
	if hl == nil {
		t.Fatal("no listener")
	}
	if Listen(w) != nil {
		t.Fatal("two listeners for one pipe")
	}
	hl.Close()
	if hc := Dial(r); hc != nil {
		hc.Close()
		t.Fatal("dialed a writer that is done")
	}
}

// FuzzHello: whatever a peer sends as its hello, with or without a
// memory file, sealed or not, the reader takes it or refuses it, never
// panics or maps what it should not.
func FuzzHello(f *testing.F) {
	good := binary.LittleEndian.AppendUint64(append([]byte(nil), helloMagic...), 1<<20)
	f.Add(good, true, true)
	f.Add(good, true, false)
	f.Add(good, false, true)
	f.Add(binary.LittleEndian.AppendUint64(append([]byte(nil), helloMagic...), 1<<41), true, true)
	f.Add([]byte("SLUICE1"), true, true)
	f.Fuzz(func(t *testing.T, hello []byte, attach, sealed bool) {
		wc, rc := socketpair(t)
		defer wc.Close()
		var oob []byte
		if attach {
			fd, err := unix.MemfdCreate("fuzz", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
			if err != nil {
				t.Skip(err)
			}
			defer unix.Close(fd)
			if err := unix.Ftruncate(fd, 1<<20); err != nil {
				t.Fatal(err)
			}
			if sealed {
				unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK)
			}
			oob = unix.UnixRights(fd)
		}
		if len(hello) == 0 {
			hello = []byte{0}
		}
		if _, _, err := wc.WriteMsgUnix(hello, oob, nil); err != nil {
			rc.Close()
			t.Skip(err)
		}
		if mr := (&Conn{c: rc}).Take(); mr != nil {
			if !attach || !sealed {
				t.Fatal("took a hello without a sealed file")
			}
			mr.Release()
		}
	})
}

// TestRunsAhead: the writer runs ahead of its reader by up to aheadBytes
// of messages, but always by two, and each message taken makes room for
// its own size.
func TestRunsAhead(t *testing.T) {
	h := &Writer{}
	const small = 1 << 20
	n := 0
	for h.room(small) {
		h.sent(small)
		n++
	}
	if n != aheadBytes/small {
		t.Fatalf("%d messages of 1 MiB ahead, want %d", n, aheadBytes/small)
	}
	h.taken()
	if !h.room(small) || h.room(small+1) {
		t.Fatal("taking a 1 MiB message did not make room for exactly 1 MiB")
	}
	for len(h.inflight) > 0 {
		h.taken()
	}
	if h.ahead != 0 {
		t.Fatalf("%d bytes ahead with no message", h.ahead)
	}
	const big = aheadBytes // each alone fills the window
	n = 0
	for h.room(big) {
		h.sent(big)
		n++
	}
	if n != aheadMessages {
		t.Fatalf("%d messages of %d bytes ahead, want %d", n, big, aheadMessages)
	}
	h.taken()
	if !h.room(big) {
		t.Fatal("one of two large messages taken, and no room for the next")
	}
}

// TestWriterRunsAheadOfReader: through a real socket, a writer sends more
// than two small messages to a reader that takes none, and ends once the
// reader has taken them all and the end marker.
func TestWriterRunsAheadOfReader(t *testing.T) {
	wc, rc := socketpair(t)
	defer rc.Close()
	h, err := offer(wc)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	go h.readAcks()
	hello, oob := make([]byte, 64), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := rc.ReadMsgUnix(hello, oob)
	if err != nil {
		t.Fatal(err)
	}
	if cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(cmsgs) == 1 {
		if fds, err := unix.ParseUnixRights(&cmsgs[0]); err == nil {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}
	const n = 6 // of 1 KiB: far below aheadBytes
	werr := make(chan error, 1)
	wrote := make(chan struct{})
	go func() {
		for range n {
			if err := h.Write([][]byte{make([]byte, 1024)}); err != nil {
				werr <- err
				return
			}
		}
		close(wrote)
		werr <- h.End()
	}()
	// The deadline only turns a writer that stopped ahead into a failure
	// instead of a hang; nothing here depends on how fast either end is.
	rc.SetReadDeadline(time.Now().Add(30 * time.Second))
	p := make([]byte, 32)
	for i := range n {
		k, err := rc.Read(p)
		if err != nil {
			t.Fatalf("message %d of %d never came while none was taken: %v", i+1, n, err)
		}
		if k != 17 || p[0] != 'M' {
			t.Fatalf("packet %d is %q", i+1, p[:k])
		}
	}
	<-wrote // every Write returned with none taken
	for range n {
		if _, err := rc.Write([]byte{'T'}); err != nil {
			t.Fatal(err)
		}
	}
	if k, err := rc.Read(p); err != nil || k != 1 || p[0] != 'E' {
		t.Fatalf("read %q, %v, want the end marker", p[:k], err)
	}
	if _, err := rc.Write([]byte{'T'}); err != nil {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.inflight) != 0 || h.ahead != 0 {
		t.Fatalf("%d messages, %d bytes still ahead after all were taken", len(h.inflight), h.ahead)
	}
}
