package exec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"golang.org/x/sys/unix"

	"github.com/sluice-data/sluice/internal/peercred"
)

// The hand-off between adjacent sluice stages: when both ends of a pipe
// are sluice stages, the writer puts each IPC message in a memory file
// shared with the reader and sends only its place, over a Unix socket
// named after the pipe; the reader's batches are then the writer's bytes,
// not copies out of a pipe into fresh pages. Any other reader gets the
// plain stream, because the writer only hands off to a reader that is
// listening on that socket when the first message is ready.
//
// The socket carries packets (SOCK_SEQPACKET), from the writer:
//
//	hello  "SLUICE1\x00" + size (8 bytes), with the memory file (SCM_RIGHTS)
//	'M' + offset (8) + length (8)   a message: the IPC stream's bytes for it
//	'E'                             the end-of-stream marker
//
// and from the reader: "OK" (hello taken), 'T' (a message taken, for flow
// control), 'F' + offset (8) (the memory of the message at offset is no
// longer referenced: the writer may reuse it). The writer never writes a
// range the reader has not freed, and the reader maps the file read-only.

// handoffSize is the memory file's size: address space, not memory, as
// only the pages written are allocated. It bounds what the next stage may
// hold at once (a sort holds all of its input).
const handoffSize = 1 << 40

// handoffWindow is how many messages the writer sends ahead of the
// reader, as a pipe's buffer bounds how far a writer runs ahead.
const handoffWindow = 2

const pageSize = 4096

var handoffHello = []byte("SLUICE1\x00")

// handoffsTaken counts the hand-offs this process's readers took.
var handoffsTaken atomic.Int64

// HandoffsTaken is how many of this process's inputs came through shared
// memory from the stage before.
func HandoffsTaken() int64 { return handoffsTaken.Load() }

// handoffEnabled says whether stages hand off through shared memory;
// SLUICE_PIPE=plain keeps every pipe a plain Arrow IPC stream.
func handoffEnabled() bool { return os.Getenv("SLUICE_PIPE") != "plain" }

// handoffName is the abstract socket name for pipe f, the same at both
// of its ends; false when f is not a pipe.
func handoffName(f *os.File) (string, bool) { return peercred.PipeName(f, "pipe") }

// handoffAddr is the socket address of pipe f's hand-off; false when f
// is no pipe or hand-off is off.
func handoffAddr(f *os.File) (*net.UnixAddr, bool) {
	if !handoffEnabled() {
		return nil, false
	}
	name, ok := handoffName(f)
	if !ok {
		return nil, false
	}
	return &net.UnixAddr{Name: name, Net: "unixpacket"}, true
}

// handoffListener waits, on the reading end of a pipe, for the stage
// before to connect.
type handoffListener struct {
	l *net.UnixListener
}

// listenHandoff listens for the writer of pipe f; nil when f is not a
// pipe, hand-off is off, or the name is taken (another reader of the
// same pipe).
func listenHandoff(f *os.File) *handoffListener {
	addr, ok := handoffAddr(f)
	if !ok {
		return nil
	}
	l, err := net.ListenUnix("unixpacket", addr)
	if err != nil {
		return nil
	}
	return &handoffListener{l: l}
}

// await waits for the stage before either to connect, and returns the
// hand-off, or to write to the pipe, and returns what it read first (the
// start of a plain stream, nil at the pipe's end).
func (hl *handoffListener) await(ctx context.Context, pipe *os.File) (ipc.MessageReader, []byte, error) {
	type read struct {
		b   []byte
		err error
	}
	reads := make(chan read, 1)
	go func() {
		b := make([]byte, 8)
		n, err := pipe.Read(b)
		reads <- read{b[:n], err}
	}()
	conns := make(chan *handoffReader, 1)
	go func() {
		// Each connection's hello is taken on its own, so one that says
		// nothing holds up no other; the first that succeeds is used.
		var once sync.Once
		for {
			c, err := hl.l.AcceptUnix()
			if err != nil {
				once.Do(func() { conns <- nil })
				return
			}
			go func() {
				h, err := acceptHandoff(c)
				if err != nil {
					c.Close()
					return
				}
				used := false
				once.Do(func() { conns <- h; used = true })
				if !used {
					h.Close()
				}
			}()
		}
	}()
	closeListener := func() {
		hl.l.Close()
		// A hand-off that completed meanwhile is not used: closing it
		// fails the writer, which had no reason to connect then.
		go func() {
			if h := <-conns; h != nil {
				h.Close()
			}
		}()
	}
	fromPipe := func(r read) (ipc.MessageReader, []byte, error) {
		if r.err != nil && r.err != io.EOF {
			return nil, nil, r.err
		}
		return nil, r.b, nil
	}
	select {
	case <-ctx.Done():
		closeListener()
		return nil, nil, ctx.Err()
	case r := <-reads:
		closeListener()
		return fromPipe(r)
	case h := <-conns:
		hl.l.Close()
		if h != nil {
			handoffsTaken.Add(1)
			return h, nil, nil
		}
		// The listener failed: only the pipe is left.
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case r := <-reads:
			return fromPipe(r)
		}
	}
}

// handoffReader is the reading end of a hand-off: an ipc.MessageReader
// whose message bodies are the writer's memory.
type handoffReader struct {
	c    *net.UnixConn
	mem  []byte // the shared file, read-only
	refs atomic.Int64
	msg  *ipc.Message
	pkt  [32]byte
	// populated: mem[:populated] is mapped, so reading it takes no faults.
	populated uint64

	mu          sync.Mutex
	outstanding int  // bodies not yet freed
	closed      bool // the reader is done; unmap when nothing is outstanding
}

// acceptHandoff takes the writer's hello: its memory file, mapped
// read-only.
func acceptHandoff(c *net.UnixConn) (*handoffReader, error) {
	if err := peercred.SameUser(c); err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	fd := -1
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			fds, err := unix.ParseUnixRights(&m)
			if err != nil {
				continue
			}
			for _, f := range fds {
				if fd < 0 {
					fd = f
				} else {
					unix.Close(f)
				}
			}
		}
	}
	if fd < 0 {
		return nil, errors.New("hand-off: no memory file")
	}
	defer unix.Close(fd)
	if n != len(handoffHello)+8 || string(buf[:len(handoffHello)]) != string(handoffHello) {
		return nil, errors.New("hand-off: bad hello")
	}
	size := binary.LittleEndian.Uint64(buf[len(handoffHello):])
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	// A file that could shrink would fault the reader's accesses past
	// its new end (SIGBUS).
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_SHRINK == 0 || uint64(st.Size) < size || size == 0 || size > handoffSize {
		return nil, errors.New("hand-off: memory file not sealed against shrinking")
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write([]byte("OK")); err != nil {
		unix.Munmap(mem)
		return nil, err
	}
	c.SetDeadline(time.Time{})
	h := &handoffReader{c: c, mem: mem}
	h.refs.Add(1)
	return h, nil
}

func (h *handoffReader) Retain() { h.refs.Add(1) }

func (h *handoffReader) Release() {
	if h.refs.Add(-1) == 0 {
		if h.msg != nil {
			h.msg.Release()
			h.msg = nil
		}
		h.Close()
	}
}

// Close ends the hand-off: the writer sees the reader gone. The mapping
// stays while batches still reference it.
func (h *handoffReader) Close() {
	h.c.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		h.unmapIfDone()
	}
}

func (h *handoffReader) unmapIfDone() {
	if h.closed && h.outstanding == 0 && h.mem != nil {
		unix.Munmap(h.mem)
		h.mem = nil
	}
}

// Message returns the next message, valid until the next call; io.EOF
// after the end-of-stream marker.
func (h *handoffReader) Message() (*ipc.Message, error) {
	if h.msg != nil {
		h.msg.Release()
		h.msg = nil
	}
	n, err := h.c.Read(h.pkt[:])
	if err != nil || n == 0 {
		return nil, errNoEndMarker
	}
	switch {
	case h.pkt[0] == 'E' && n == 1:
		h.c.Write([]byte{'T'})
		return nil, io.EOF
	case h.pkt[0] == 'M' && n == 17:
	default:
		return nil, errors.New("arrow/ipc: hand-off: unknown packet")
	}
	off := binary.LittleEndian.Uint64(h.pkt[1:])
	length := binary.LittleEndian.Uint64(h.pkt[9:])
	h.c.Write([]byte{'T'})
	msg, err := h.parse(off, length)
	if err != nil {
		return nil, err
	}
	h.msg = msg
	return msg, nil
}

// parse reads the message the writer put at mem[off:off+length].
func (h *handoffReader) parse(off, length uint64) (*ipc.Message, error) {
	if off > uint64(len(h.mem)) || length > uint64(len(h.mem))-off || length < 8 {
		return nil, fmt.Errorf("arrow/ipc: hand-off: message at %d+%d outside the shared memory", off, length)
	}
	if end := (off + length + pageSize - 1) &^ (pageSize - 1); end > h.populated {
		_ = unix.Madvise(h.mem[h.populated:min(end, uint64(len(h.mem)))], unix.MADV_POPULATE_READ)
		h.populated = end
	}
	b := h.mem[off : off+length]
	if binary.LittleEndian.Uint32(b) != 0xFFFFFFFF {
		return nil, errors.New("arrow/ipc: hand-off: message without continuation marker")
	}
	size := int64(int32(binary.LittleEndian.Uint32(b[4:])))
	if size < 4 || size > maxMetadata || size > int64(length)-8 {
		return nil, fmt.Errorf("arrow/ipc: invalid message metadata length %d", size)
	}
	// The metadata is copied: it is small, and checked once.
	metaBuf, bodyLen, err := checkMetadata(append([]byte(nil), b[8:8+size]...))
	if err != nil {
		return nil, err
	}
	defer metaBuf.Release()
	if bodyLen > int64(length)-8-size {
		return nil, fmt.Errorf("arrow/ipc: hand-off: message body of %d bytes past its %d", bodyLen, length)
	}
	start := 8 + size
	var body *memory.Buffer
	if bodyLen == 0 {
		body = memory.NewBufferBytes(nil)
		h.free(off)
	} else {
		h.mu.Lock()
		h.outstanding++
		h.mu.Unlock()
		body = memory.NewBufferWithAllocator(b[start:start+bodyLen:start+bodyLen], &handoffBody{h: h, off: off})
	}
	defer body.Release()
	return ipc.NewMessage(metaBuf, body), nil
}

// free tells the writer that the message at off is no longer referenced.
func (h *handoffReader) free(off uint64) {
	var p [9]byte
	p[0] = 'F'
	binary.LittleEndian.PutUint64(p[1:], off)
	h.c.Write(p[:]) // a writer that is gone needs no word
}

// handoffBody is the allocator of a message body in shared memory: its
// Free hands the range back to the writer.
type handoffBody struct {
	h   *handoffReader
	off uint64
}

func (b *handoffBody) Allocate(n int) []byte { return make([]byte, n) }

func (b *handoffBody) Reallocate(n int, old []byte) []byte {
	p := make([]byte, n)
	copy(p, old)
	return p
}

func (b *handoffBody) Free([]byte) {
	b.h.free(b.off)
	b.h.mu.Lock()
	b.h.outstanding--
	b.h.unmapIfDone()
	b.h.mu.Unlock()
}

// handoffWriter is the writing end: messages go into the shared file at
// ranges the reader has freed.
type handoffWriter struct {
	c   *net.UnixConn
	fd  int    // the shared file
	mem []byte // the writer's mapping of it

	mu       sync.Mutex
	cond     sync.Cond
	free     []extent          // free ranges, by offset
	used     map[uint64]uint64 // offset -> length of ranges the reader holds
	inflight int               // messages sent and not yet taken
	err      error             // the reader is gone
	pkt      [17]byte
}

type extent struct{ off, end uint64 }

// dialHandoff connects to a sluice stage reading pipe f and sets up the
// shared file; nil when the reader is no sluice stage (nothing listens)
// or anything fails: the plain stream then goes through the pipe.
func dialHandoff(f *os.File) *handoffWriter {
	addr, ok := handoffAddr(f)
	if !ok {
		return nil
	}
	c, err := net.DialUnix("unixpacket", nil, addr)
	if err != nil {
		return nil
	}
	h, err := startHandoff(c)
	if err != nil {
		c.Close()
		return nil
	}
	return h
}

func startHandoff(c *net.UnixConn) (*handoffWriter, error) {
	if err := peercred.SameUser(c); err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("sluice-stage-output", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*handoffWriter, error) {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Ftruncate(fd, handoffSize); err != nil {
		return fail(err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return fail(err)
	}
	hello := binary.LittleEndian.AppendUint64(append([]byte(nil), handoffHello...), handoffSize)
	// No deadline on the answer: a reader that said OK reads the socket
	// from then on, so giving up on a slow OK and writing the pipe
	// instead would leave the two ends disagreeing. A reader that fails
	// closes the socket, which ends the wait.
	ok := make([]byte, 8)
	var n int
	if _, _, err = c.WriteMsgUnix(hello, unix.UnixRights(fd), nil); err == nil {
		n, err = c.Read(ok)
	}
	if err == nil && string(ok[:n]) != "OK" {
		err = errors.New("hand-off refused")
	}
	if err != nil {
		return fail(err)
	}
	mem, err := unix.Mmap(fd, 0, handoffSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_NORESERVE)
	if err != nil {
		return fail(err)
	}
	h := &handoffWriter{c: c, fd: fd, mem: mem, free: []extent{{0, handoffSize}}, used: map[uint64]uint64{}}
	h.cond.L = &h.mu
	go h.readAcks()
	return h, nil
}

// errReaderGone is the next stage closing its end, as EPIPE is on a pipe.
var errReaderGone = fmt.Errorf("the next stage closed its input: %w", syscall.EPIPE)

func (h *handoffWriter) readAcks() {
	var p [16]byte
	for {
		n, err := h.c.Read(p[:])
		h.mu.Lock()
		switch {
		case err != nil || n == 0:
			h.err = errReaderGone
			h.cond.Broadcast()
			h.mu.Unlock()
			return
		case p[0] == 'T' && n == 1:
			h.inflight--
		case p[0] == 'F' && n == 9:
			h.release(binary.LittleEndian.Uint64(p[1:]))
		}
		h.cond.Broadcast()
		h.mu.Unlock()
	}
}

// handoffAlign keeps every message 64-byte aligned; a body, after 8 bytes
// of prefix and metadata padded to 8, is 8-byte aligned, as Arrow needs.
const handoffAlign = 64

// alloc takes the lowest free range of n bytes, so that the pages
// already touched are the ones reused.
func (h *handoffWriter) alloc(n uint64) (uint64, bool) {
	n = (n + handoffAlign - 1) &^ (handoffAlign - 1)
	for i, e := range h.free {
		if e.end-e.off >= n {
			off := e.off
			if h.free[i].off += n; h.free[i].off == e.end {
				h.free = append(h.free[:i], h.free[i+1:]...)
			}
			h.used[off] = n
			return off, true
		}
	}
	return 0, false
}

// release frees the range at off, merging it with its neighbours.
func (h *handoffWriter) release(off uint64) {
	n, ok := h.used[off]
	if !ok {
		return
	}
	delete(h.used, off)
	end := off + n
	i := sort.Search(len(h.free), func(i int) bool { return h.free[i].off >= off })
	if i < len(h.free) && h.free[i].off == end {
		h.free[i].off = off
	} else {
		h.free = append(h.free, extent{})
		copy(h.free[i+1:], h.free[i:])
		h.free[i] = extent{off, end}
	}
	if i > 0 && h.free[i-1].end == h.free[i].off {
		h.free[i-1].end = h.free[i].end
		h.free = append(h.free[:i], h.free[i+1:]...)
	}
}

// write puts one message, given as its pieces, in the shared file and
// sends its place.
func (h *handoffWriter) write(vec [][]byte) error {
	var n uint64
	for _, b := range vec {
		n += uint64(len(b))
	}
	h.mu.Lock()
	for h.inflight >= handoffWindow && h.err == nil {
		h.cond.Wait()
	}
	if h.err != nil {
		h.mu.Unlock()
		return h.err
	}
	off, ok := h.alloc(n)
	if ok {
		h.inflight++
	}
	h.mu.Unlock()
	if !ok {
		return fmt.Errorf("the next stage holds more than %d GiB of this stage's output", handoffSize>>30)
	}
	// A copy through the writer's own mapping: ranges are reused lowest
	// first, so after the first round the same resident pages take each
	// message, where pwritev looks up and locks every page in the file's
	// cache on every write (measured: a third less system time, piped
	// queries A and B 10-15 % less CPU).
	at := off
	for _, b := range vec {
		at += uint64(copy(h.mem[at:off+n], b))
	}
	h.pkt[0] = 'M'
	binary.LittleEndian.PutUint64(h.pkt[1:], off)
	binary.LittleEndian.PutUint64(h.pkt[9:], n)
	return h.send(h.pkt[:])
}

// end sends the end-of-stream marker and waits for the reader to take
// it: closing a Unix socket with acks still unread resets the peer's
// end, which would lose the messages the reader had not read yet.
func (h *handoffWriter) end() error {
	h.mu.Lock()
	h.inflight++
	h.mu.Unlock()
	if err := h.send([]byte{'E'}); err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for h.inflight > 0 && h.err == nil {
		h.cond.Wait()
	}
	if h.inflight > 0 {
		return h.err
	}
	return nil
}

func (h *handoffWriter) send(p []byte) error {
	if _, err := h.c.Write(p); err != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.err != nil {
			return h.err
		}
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return errReaderGone
		}
		return err
	}
	return nil
}

// close ends the writer's side; the reader keeps its own mapping of what
// it still holds.
func (h *handoffWriter) close() {
	h.c.Close()
	if h.fd >= 0 {
		unix.Munmap(h.mem)
		unix.Close(h.fd)
		h.fd, h.mem = -1, nil
	}
}
