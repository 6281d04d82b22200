package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// ReadIPC is a source that reads an Arrow IPC stream, as a stage run as
// its own process reads its standard input.
//
// The stream must end with the end-of-stream marker: a stream cut at a
// message boundary (an upstream stage that died between batches) is an
// error, never a short result.
func ReadIPC(r io.Reader) SourceStage { return ipcSourceStage{r} }

type ipcSourceStage struct{ r io.Reader }

func (ipcSourceStage) Name() string { return "stdin" }

func (s ipcSourceStage) open(ctx context.Context, e *env) (Source, error) {
	t := &eofTracker{r: s.r}
	rd, err := ipc.NewReader(t, ipc.WithAllocator(e.mem))
	if err != nil {
		if t.sawEOF && t.n == 0 {
			return nil, errors.New("input: empty: expected an Arrow IPC stream (did the stage before this one fail?)")
		}
		return nil, fmt.Errorf("input: not an Arrow IPC stream: %w", err)
	}
	return &ipcSource{rd: rd, t: t}, nil
}

type ipcSource struct {
	rd   *ipc.Reader
	t    *eofTracker
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
		rec.Retain()
		return rec, nil
	}
	s.done = true
	if err := s.rd.Err(); err != nil {
		return nil, fmt.Errorf("input: broken Arrow IPC stream: %w", err)
	}
	// A proper end is the 8-byte end-of-stream marker, read without
	// reaching the end of the input; running into the end instead means
	// the writer stopped between batches.
	if s.t.sawEOF {
		return nil, errors.New("input: Arrow IPC stream ended without its end-of-stream marker (did the stage before this one fail?)")
	}
	return nil, io.EOF
}

func (s *ipcSource) Close() error {
	s.rd.Release()
	return nil
}

// eofTracker notes whether the reader above it ever ran into the end.
type eofTracker struct {
	r      io.Reader
	n      int64
	sawEOF bool
}

func (t *eofTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.n += int64(n)
	if err == io.EOF {
		t.sawEOF = true
	}
	return n, err
}

// WriteIPC is a sink that writes the stream as Arrow IPC, as a stage run
// as its own process writes its standard output. The end-of-stream
// marker is written only when the whole pipeline succeeded, so a reader
// can tell a failure from a short result.
func WriteIPC(w io.Writer) Stage { return ipcSinkStage{w} }

type ipcSinkStage struct{ w io.Writer }

func (ipcSinkStage) Name() string { return "stdout" }
func (ipcSinkStage) isSink()      {}

func (s ipcSinkStage) bind(e *env, in *arrow.Schema) (*plan, error) {
	return &plan{name: s.Name(), newOp: func(operator) (operator, error) {
		bw := bufio.NewWriterSize(s.w, 1<<20)
		g := &gate{w: bw}
		return &ipcSink{bw: bw, g: g, w: ipc.NewWriter(g, ipc.WithSchema(in), ipc.WithAllocator(e.mem))}, nil
	}}, nil
}

type ipcSink struct {
	bw       *bufio.Writer
	g        *gate
	w        *ipc.Writer
	finished bool
}

func (s *ipcSink) push(ctx context.Context, rec arrow.RecordBatch) error {
	if err := s.w.Write(rec); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return nil
}

func (s *ipcSink) finish(ctx context.Context) error {
	s.finished = true
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	if err := s.bw.Flush(); err != nil {
		return fmt.Errorf("output: %w", err)
	}
	return nil
}

func (s *ipcSink) release() {
	if !s.finished {
		// Close releases the writer's memory; the gate keeps its
		// end-of-stream marker off the output, and what was written
		// before the failure is flushed so the reader sees a stream
		// without an end.
		s.g.closed = true
		_ = s.w.Close()
		_ = s.bw.Flush()
	}
}

// gate drops writes once closed.
type gate struct {
	w      io.Writer
	closed bool
}

func (g *gate) Write(p []byte) (int, error) {
	if g.closed {
		return len(p), nil
	}
	return g.w.Write(p)
}
