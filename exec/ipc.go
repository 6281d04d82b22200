package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/ipccheck"
	"github.com/sluice-data/sluice/internal/pipeio"
	"github.com/sluice-data/sluice/mempool"
)

// ReadIPC is a source that reads an Arrow IPC stream, as a stage run as
// its own process reads its standard input.
//
// The stream must end with the end-of-stream marker: a stream cut at a
// message boundary (an upstream stage that died between batches) is an
// error, never a short result.
//
// A pipe is read through a non-blocking descriptor of its own, so that
// waiting for the stage before parks a goroutine instead of a thread.
func ReadIPC(r io.Reader) SourceStage {
	return readIPC(r)
}

func readIPC(r io.Reader) ipcSourceStage {
	return ipcSourceStage{r: r, name: "input", hint: " (did the stage before this one fail?)"}
}

type ipcSourceStage struct {
	r io.Reader
	// name is what errors call the stream; hint says what to look at
	// when it ends too soon.
	name, hint string
}

func (ipcSourceStage) Name() string { return "stdin" }

func (s ipcSourceStage) open(ctx context.Context, e *env) (Source, error) {
	r, own := s.r, (*os.File)(nil)
	var pipe *os.File
	if f, ok := r.(*os.File); ok {
		if own = reopenPipe(f, os.O_RDONLY); own != nil {
			r = own
			if e.handOff {
				pipe = f
			}
		}
	}
	if f, ok := s.r.(*os.File); ok && own == nil {
		// A file given as stdin (< q.arrow) may be an Arrow IPC file:
		// read it in its footer's order, as any Arrow reader does.
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && hasArrowMagic(f) {
			fm, err := newFileMessages(f, fi.Size(), e.mem)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			rd, err := ipc.NewReaderFromMessageReader(fm, ipc.WithAllocator(e.mem))
			if err != nil {
				return nil, fmt.Errorf("%s: broken Arrow IPC file: %w", s.name, err)
			}
			return &ipcSource{rd: rd, name: s.name, hint: s.hint}, nil
		}
	}
	mr := newMessageReader(r, e.mem)
	mr.pipe, mr.handedOff = pipe, e.handedOff
	rd, err := ipc.NewReaderFromMessageReader(mr, ipc.WithAllocator(e.mem))
	if err != nil { // the reader released mr
		if own != nil {
			own.Close()
		}
		if mr.n == 0 {
			return nil, fmt.Errorf("%s: empty: expected an Arrow IPC stream%s", s.name, s.hint)
		}
		if what := describeStart(mr.first[:min(mr.n, int64(len(mr.first)))]); what != "" {
			return nil, fmt.Errorf("%s: not an Arrow IPC stream: it is %s", s.name, what)
		}
		return nil, fmt.Errorf("%s: not an Arrow IPC stream: %w", s.name, err)
	}
	return &ipcSource{rd: rd, own: own, name: s.name, hint: s.hint}, nil
}

func hasArrowMagic(ra io.ReaderAt) bool {
	head := make([]byte, len(arrowMagic))
	_, err := ra.ReadAt(head, 0)
	return err == nil && bytes.Equal(head, arrowMagic)
}

// describeStart says what input that is not an IPC stream looks like, so
// the error tells the user which command reads it; "" when unsure.
func describeStart(head []byte) string {
	switch {
	case bytes.HasPrefix(head, arrowMagic[:4]): // only the first word is read before the length check fails
		return "an Arrow IPC file, which a pipe cannot read in its footer's order (redirect it: sluice show < FILE)"
	case bytes.HasPrefix(head, []byte("PAR1")):
		return "a Parquet file (read it with sluice scan FILE -o -)"
	}
	text := true
	for _, c := range head {
		text = text && (c == '\t' || c == '\n' || c == '\r' || c >= 0x20 && c < 0x7f)
	}
	if text {
		return fmt.Sprintf("text starting %q (CSV is read by sluice from-csv)", head)
	}
	return ""
}

type ipcSource struct {
	rd   *ipc.Reader
	own  *os.File // the descriptor opened here, if any
	name string   // what errors call the input
	hint string   // what to look at when it ends too soon
	done bool
}

func (s *ipcSource) Schema() *arrow.Schema { return s.rd.Schema() }

func (s *ipcSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.done {
		return nil, io.EOF
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.rd.Next() {
		rec := s.rd.RecordBatch()
		if err := ipccheck.Batch(rec); err != nil {
			s.done = true
			return nil, fmt.Errorf("%s: broken Arrow IPC stream: %w", s.name, err)
		}
		rec.Retain()
		return rec, nil
	}
	s.done = true
	if err := s.rd.Err(); err != nil {
		if errors.Is(err, errNoEndMarker) {
			return nil, fmt.Errorf("%s: Arrow IPC stream ended without its end-of-stream marker%s", s.name, s.hint)
		}
		return nil, fmt.Errorf("%s: broken Arrow IPC stream: %w", s.name, err)
	}
	return nil, io.EOF
}

func (s *ipcSource) Close() error {
	s.rd.Release()
	if s.own != nil {
		s.own.Close()
	}
	return nil
}

// errNoEndMarker is the input ending at a message boundary: the writer
// stopped between batches.
var errNoEndMarker = pipeio.ErrNoEndMarker

// messageReader reads the messages of an IPC stream as arrow-go's own
// does, but takes each body from a mempool.Pool without zeroing it first: the
// read overwrites every byte, so clearing would only pass over the
// batch's memory once more.
//
// On a pipe whose writer may hand off (pipe set), it connects to the
// writer once it has read the first bytes, and where the stream says so
// (pipeio.SwitchMarker) reads the rest of it through shared memory.
type messageReader struct {
	r   io.Reader
	mem memory.Allocator
	n   int64 // bytes read
	// first holds the input's first bytes, to say what it is when it
	// is not an IPC stream.
	first [8]byte
	msg   *ipc.Message
	refs  atomic.Int64
	hdr   [4]byte

	// pipe is the pipe r reads, when its writer may hand off; nil once
	// dialed.
	pipe *os.File
	conn *pipeio.Conn      // to the writer, until the switch or the end
	ho   ipc.MessageReader // the rest of the stream, after the switch
	// handedOff is called at the switch.
	handedOff func()
}

func newMessageReader(r io.Reader, mem memory.Allocator) *messageReader {
	m := &messageReader{r: r, mem: mem}
	m.refs.Add(1)
	return m
}

func (m *messageReader) Retain() { m.refs.Add(1) }

func (m *messageReader) Release() {
	if m.refs.Add(-1) == 0 {
		if m.msg != nil {
			m.msg.Release()
			m.msg = nil
		}
		m.hangUp()
		if m.ho != nil {
			m.ho.Release()
			m.ho = nil
		}
	}
}

// hangUp drops a connection to the writer that was not switched to.
func (m *messageReader) hangUp() {
	if m.conn != nil {
		m.conn.Close()
		m.conn = nil
	}
}

func (m *messageReader) read(p []byte) error {
	n, err := io.ReadFull(m.r, p)
	if m.n < int64(len(m.first)) {
		copy(m.first[m.n:], p[:n])
	}
	m.n += int64(n)
	if m.pipe != nil && m.n > 0 {
		// A byte read is a byte written: a sluice writer that hands off
		// listened before it wrote it, so nothing is waited for.
		m.conn = pipeio.Dial(m.pipe)
		m.pipe = nil
	}
	return err
}

// Message returns the next message, valid until the next call; io.EOF
// after the end-of-stream marker.
func (m *messageReader) Message() (msg *ipc.Message, err error) {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	if m.ho != nil {
		return m.ho.Message()
	}
	if err := m.read(m.hdr[:]); err != nil {
		if err == io.EOF {
			return nil, errNoEndMarker
		}
		return nil, fmt.Errorf("arrow/ipc: could not read continuation indicator: %w", err)
	}
	var size int32
	switch cid := binary.LittleEndian.Uint32(m.hdr[:]); cid {
	case 0:
		m.hangUp()
		return nil, io.EOF
	case 0xFFFFFFFF:
		if err := m.read(m.hdr[:]); err != nil {
			return nil, fmt.Errorf("arrow/ipc: could not read message length: %w", noEOF(err))
		}
		// (The marker's first word is the continuation marker just read.)
		if m.conn != nil && bytes.Equal(m.hdr[:], pipeio.SwitchMarker[4:]) {
			return m.switchOver()
		}
		size = int32(binary.LittleEndian.Uint32(m.hdr[:]))
		if size == 0 {
			m.hangUp()
			return nil, io.EOF
		}
	default:
		size = int32(cid) // before format 0.15, no continuation marker
	}
	if size < 4 || size > ipccheck.MaxMetadata {
		return nil, fmt.Errorf("arrow/ipc: invalid message metadata length %d", size)
	}
	meta := make([]byte, size)
	if err := m.read(meta); err != nil {
		return nil, fmt.Errorf("arrow/ipc: could not read message metadata: %w", noEOF(err))
	}
	metaBuf, bodyLen, err := ipccheck.MessageMetadata(meta)
	if err != nil {
		return nil, err
	}
	defer metaBuf.Release()
	body, err := m.readBody(bodyLen)
	if err != nil {
		return nil, fmt.Errorf("arrow/ipc: could not read message body: %w", noEOF(err))
	}
	defer body.Release()
	m.msg = ipc.NewMessage(metaBuf, body)
	return m.msg, nil
}

// switchOver takes the writer's hello where the pipe says the stream goes
// on through shared memory, and reads on from there; a hello it cannot
// take is refused, and the stream goes on in the pipe.
func (m *messageReader) switchOver() (*ipc.Message, error) {
	conn := m.conn
	m.conn = nil
	if m.ho = conn.Take(); m.ho == nil {
		return m.Message()
	}
	if m.handedOff != nil {
		m.handedOff()
	}
	return m.ho.Message()
}

// bodyStep is the most a body takes before its bytes arrive: a length
// the input does not back fails at the input's end instead of being
// allocated first.
const bodyStep = 64 << 20

// readBody reads a body of n bytes into a buffer of the allocator; one
// over bodyStep grows as it arrives.
func (m *messageReader) readBody(n int64) (*memory.Buffer, error) {
	have := min(n, bodyStep)
	buf := mempool.DirtyBuffer(m.mem, int(have))
	if err := m.read(buf.Bytes()); err != nil {
		buf.Release()
		return nil, err
	}
	for have < n {
		next := min(n, 2*have)
		grown := mempool.DirtyBuffer(m.mem, int(next))
		copy(grown.Bytes(), buf.Bytes())
		buf.Release()
		buf = grown
		if err := m.read(buf.Bytes()[have:next]); err != nil {
			buf.Release()
			return nil, err
		}
		have = next
	}
	return buf, nil
}

// noEOF makes the end of the input inside a message an unexpected one.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// WriteIPC is a sink that writes the stream as Arrow IPC, as a stage run
// as its own process writes its standard output. The end-of-stream
// marker is written only when the whole pipeline succeeded, so a reader
// can tell a failure from a short result.
//
// Each message goes out in one gathered write of its buffers, not copied
// into a buffer first; a pipe is written through a non-blocking
// descriptor of its own, so that waiting for the stage after parks a
// goroutine instead of a thread.
func WriteIPC(w io.Writer) Stage { return ipcSinkStage{w: w} }

// WriteIPCCounted is WriteIPC that also adds the rows it writes to
// *rows, which the caller reads once the run is over.
func WriteIPCCounted(w io.Writer, rows *int64) Stage { return ipcSinkStage{w: w, rows: rows} }

type ipcSinkStage struct {
	w    io.Writer
	rows *int64
}

func (ipcSinkStage) Name() string { return "stdout" }
func (ipcSinkStage) isSink()      {}

func (s ipcSinkStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	return &bound{name: s.Name(), newOp: func(operator) (operator, error) {
		return &ipcSink{sw: newStreamWriter(s.w, in, streamOptions{Mem: e.mem, HandOff: e.handOff}), rows: s.rows}, nil
	}}, nil
}

type ipcSink struct {
	sw   *streamWriter
	rows *int64
}

func (s *ipcSink) push(ctx context.Context, rec arrow.RecordBatch) error {
	if err := s.sw.Write(rec); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if s.rows != nil {
		*s.rows += rec.NumRows()
	}
	return nil
}

func (s *ipcSink) finish(ctx context.Context) error {
	if err := s.sw.Close(); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return nil
}

func (s *ipcSink) release() { s.sw.Abort() }

// streamWriter writes an Arrow IPC stream as a stage writes its standard
// output: each message in one gathered write, a pipe through a
// non-blocking descriptor of its own, and with streamOptions.HandOff, to
// a pipe whose reader is a sluice stage, through shared memory instead. The
// end-of-stream marker is written by Close only, so a reader of a stream
// left by Abort sees a failure, not a short result.
type streamWriter struct {
	pw   *payloadWriter
	w    *ipc.Writer
	done bool
}

// streamOptions configure newStreamWriter.
type streamOptions struct {
	// Mem allocates the writer's scratch; nil means
	// memory.DefaultAllocator.
	Mem memory.Allocator
	// HandOff hands the messages to a sluice stage reading the pipe
	// through shared memory, as Options.HandOff.
	HandOff bool
}

// newStreamWriter starts a stream of schema on w.
func newStreamWriter(w io.Writer, schema *arrow.Schema, opts streamOptions) *streamWriter {
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	pw := &payloadWriter{w: w}
	if f, ok := w.(*os.File); ok {
		pw.file = f
		if own := reopenPipe(f, os.O_WRONLY); own != nil {
			pw.w, pw.file, pw.own = own, own, own
			if opts.HandOff {
				// Before the first byte: a reader that has read one
				// finds the writer listening.
				pw.offer = pipeio.Listen(f)
			}
		}
	}
	return &streamWriter{pw: pw, w: ipc.NewWriterWithPayloadWriter(pw, ipc.WithSchema(schema), ipc.WithAllocator(opts.Mem))}
}

// Write writes a batch.
func (s *streamWriter) Write(rec arrow.RecordBatch) error { return s.w.Write(rec) }

// Close writes the end-of-stream marker and closes what the writer
// opened; w itself stays open.
func (s *streamWriter) Close() error {
	if s.done {
		return nil
	}
	s.pw.end = true
	err := s.w.Close()
	s.done = true
	s.pw.closeOwn()
	return err
}

// Abort ends the stream without its end-of-stream marker; after Close it
// does nothing.
func (s *streamWriter) Abort() {
	if s.done {
		return
	}
	// Close releases the writer's memory; without end set, the payload
	// writer leaves the end-of-stream marker off.
	_ = s.w.Close()
	s.done = true
	s.pw.closeOwn()
}

// payloadWriter writes each IPC message as soon as arrow-go has encoded
// it, in one gathered write: the metadata and padding (small writes,
// copied) and the batch's buffers (written from where they are). The
// buffers are alive only during WritePayload, so nothing is kept past it.
type payloadWriter struct {
	w    io.Writer
	file *os.File // w, when it is a file
	own  *os.File // the descriptor opened here, if any
	end  bool     // the stream is complete: write the end-of-stream marker

	// offer listens for the reader of the pipe written, when it may be a
	// sluice stage to hand messages to through shared memory (ho): one
	// that connected is switched to at the next message boundary.
	offer   *pipeio.Listener
	started bool // a message went out
	ho      *pipeio.Writer

	small []byte
	segs  []segment
	vec   [][]byte
}

// segment is a piece of a message: a buffer of the batch, or (p nil)
// small[off:off+n].
type segment struct {
	p      []byte
	off, n int
}

// copyBelow is the size under which a write is copied rather than
// referenced: arrow-go reuses a small scratch slice for length prefixes.
const copyBelow = 4 << 10

func (pw *payloadWriter) Start() error { return nil }

func (pw *payloadWriter) WritePayload(p ipc.Payload) error {
	pw.small, pw.segs = pw.small[:0], pw.segs[:0]
	if _, err := p.WritePayload((*gather)(pw)); err != nil {
		return err
	}
	pw.vec = pw.vec[:0]
	for _, s := range pw.segs {
		if s.p == nil {
			s.p = pw.small[s.off : s.off+s.n]
		}
		pw.vec = append(pw.vec, s.p)
	}
	err := pw.writeVec(pw.vec)
	clear(pw.vec) // keep no batch's buffers reachable
	clear(pw.segs)
	return err
}

var endOfStream = [8]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}

// closeOwn closes the hand-off and the descriptor opened here, if any.
func (pw *payloadWriter) closeOwn() {
	if pw.offer != nil {
		pw.offer.Close()
		pw.offer = nil
	}
	if pw.ho != nil {
		pw.ho.Close()
		pw.ho = nil
	}
	if pw.own != nil {
		pw.own.Close()
		pw.own = nil
	}
}

func (pw *payloadWriter) Close() error {
	if !pw.end {
		return nil
	}
	if pw.ho != nil {
		return pw.ho.End()
	}
	// A stream that ends before its reader connected ends in the pipe.
	return pw.writePipe([][]byte{endOfStream[:]})
}

// writeVec writes one message: through the hand-off once switched to it,
// else in the pipe, after switching if the reader has connected since
// the message before.
func (pw *payloadWriter) writeVec(vec [][]byte) error {
	if pw.ho == nil && pw.offer != nil && pw.started {
		ho, err := pw.offer.Switch(func(marker []byte) error { return pw.writePipe([][]byte{marker}) })
		if err != nil {
			return err
		}
		pw.ho = ho
	}
	pw.started = true
	if pw.ho != nil {
		return pw.ho.Write(vec)
	}
	return pw.writePipe(vec)
}

// writePipe writes the buffers to w.
func (pw *payloadWriter) writePipe(vec [][]byte) error {
	if pw.file != nil {
		return writev(pw.file, vec)
	}
	for _, b := range vec {
		if _, err := pw.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// gather is the io.Writer that arrow-go writes a message to.
type gather payloadWriter

func (g *gather) Write(p []byte) (int, error) {
	if len(p) >= copyBelow {
		g.segs = append(g.segs, segment{p: p})
		return len(p), nil
	}
	if n := len(g.segs); n > 0 && g.segs[n-1].p == nil {
		g.segs[n-1].n += len(p) // extends the last small piece
	} else {
		g.segs = append(g.segs, segment{off: len(g.small), n: len(p)})
	}
	g.small = append(g.small, p...)
	return len(p), nil
}
