package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowsize"
	"github.com/sluice-data/sluice/internal/spillfile"
)

// posMode is what a positionSource does with the positions it reads.
type posMode int

const (
	// restoreOrder hands batches on in dataset order, without their
	// positions, leaving out the empty ones (as a scan in dataset order
	// does).
	restoreOrder posMode = iota
	// keepPositions hands batches on as they come, each with its position
	// and no other metadata, empty last batches too (a stage that does
	// not depend on order writes them on for the next one).
	keepPositions
)

// positionSource reads the positions the batches of a source carry
// (PositionKey) and either restores dataset order from them or passes
// them on. A stream whose first batch carries no position is taken as it
// is, in dataset order; one whose batches carry positions must carry one
// on every batch, each group's batches in order and ending in a last one,
// or Next fails naming the batch.
//
// Restoring order holds the batches of groups after the one due while
// the run's budget has room for them; the rest wait in a temporary file,
// so memory stays bounded however far ahead of a slow group the writer
// ran.
type positionSource struct {
	src     Source
	mode    posMode
	mem     memory.Allocator
	res     *reservation // what the held batches cost
	tempDir string

	// dropEmpty leaves out empty batches in keepPositions mode too, for
	// a sink that has no use for where a group ends.
	dropEmpty bool

	positioned int   // 0 not known yet, 1 no, 2 yes
	read       int64 // batches read, to name one in errors
	due        int64 // the group handed on now
	groups     map[int64]*heldGroup
	spill      *spillFile
	eof        bool
}

// heldGroup is what has arrived of a group not yet fully handed on.
type heldGroup struct {
	batches  []heldBatch
	last     int64 // the highest batch number seen
	complete bool  // its last batch arrived
}

// heldBatch is a batch waiting for its turn: in memory, or spilled.
type heldBatch struct {
	rec    arrow.RecordBatch
	off, n int64 // in the spill file, when rec is nil
	size   int64
}

func newPositionSource(src Source, mode posMode, e *env) *positionSource {
	return &positionSource{src: src, mode: mode, mem: e.mem, res: e.budget.reserve(0), tempDir: e.tempDir, groups: map[int64]*heldGroup{}}
}

func (s *positionSource) Schema() *arrow.Schema { return s.src.Schema() }

func (s *positionSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s.mode == restoreOrder {
			rec, done, err := s.takeDue()
			if err != nil || rec != nil {
				return rec, err
			}
			if done {
				continue
			}
		}
		if s.eof {
			return nil, s.end()
		}
		rec, err := s.src.Next(ctx)
		if err == io.EOF {
			s.eof = true
			continue
		}
		if err != nil {
			return nil, err
		}
		s.read++
		pos, ok, err := PositionOf(rec)
		if err == nil {
			err = s.checkPositioned(ok)
		}
		if err != nil {
			rec.Release()
			return nil, fmt.Errorf("input: batch %d: %w", s.read, err)
		}
		if !ok {
			out := plain(rec)
			rec.Release()
			return out, nil
		}
		out, err := s.place(rec, pos)
		if err != nil || out != nil {
			return out, err
		}
	}
}

func (s *positionSource) checkPositioned(ok bool) error {
	has := 1
	if ok {
		has = 2
	}
	switch {
	case s.positioned == 0:
		s.positioned = has
	case s.positioned != has && ok:
		return fmt.Errorf("carries a position (%s) but the first batch did not", PositionKey)
	case s.positioned != has:
		return fmt.Errorf("carries no position (%s) but the batches before it did", PositionKey)
	}
	return nil
}

// place checks rec's position against what came before it and hands it
// on (keepPositions, or the group due) or holds it; it takes rec.
func (s *positionSource) place(rec arrow.RecordBatch, pos Position) (arrow.RecordBatch, error) {
	g := s.groups[pos.Group]
	switch {
	case pos.Group < s.due:
		rec.Release()
		return nil, fmt.Errorf("input: batch %d: %s comes after the last batch of its group", s.read, pos)
	case g == nil:
		g = &heldGroup{last: -1}
		s.groups[pos.Group] = g
	case g.complete:
		rec.Release()
		return nil, fmt.Errorf("input: batch %d: %s comes after the last batch of its group", s.read, pos)
	case pos.Batch <= g.last:
		rec.Release()
		return nil, fmt.Errorf("input: batch %d: %s comes after batch %d of its group", s.read, pos, g.last)
	}
	g.last, g.complete = pos.Batch, pos.Last
	if s.mode == keepPositions {
		if g.complete {
			// Only which groups are open is kept, not the batches.
			delete(s.groups, pos.Group)
		}
		if s.dropEmpty && rec.NumRows() == 0 {
			rec.Release()
			return nil, nil
		}
		out := WithPosition(rec, pos)
		rec.Release()
		return out, nil
	}
	if pos.Group == s.due && len(g.batches) == 0 {
		// The group due streams straight through.
		if rec.NumRows() == 0 {
			rec.Release()
			return nil, nil
		}
		out := plain(rec)
		rec.Release()
		return out, nil
	}
	if rec.NumRows() == 0 {
		rec.Release() // it said where its group ends; nothing to hold
		return nil, nil
	}
	return nil, s.hold(g, rec)
}

// takeDue hands on the next held batch of the group due, or moves on to
// the next group when the due one is complete (done).
func (s *positionSource) takeDue() (rec arrow.RecordBatch, done bool, err error) {
	g := s.groups[s.due]
	if g == nil {
		return nil, false, nil
	}
	if len(g.batches) > 0 {
		h := g.batches[0]
		g.batches[0] = heldBatch{}
		g.batches = g.batches[1:]
		if h.rec == nil {
			rec, err := s.spill.read(h.off, h.n, s.src.Schema())
			return rec, false, err
		}
		s.res.shrink(h.size)
		return h.rec, false, nil
	}
	if g.complete {
		delete(s.groups, s.due)
		s.due++
		return nil, true, nil
	}
	return nil, false, nil
}

// hold keeps rec (taken) until its group is due: in memory while the
// held batches fit the budget, and the first one whatever the budget
// says (others may hold it all, past their shares: a waiting batch then
// need not go to disk when nothing else waits in memory); else in the
// spill file.
func (s *positionSource) hold(g *heldGroup, rec arrow.RecordBatch) error {
	out := plain(rec)
	rec.Release()
	size := arrowsize.Record(out)
	inMemory := s.res.held == 0
	if inMemory {
		s.res.force(size)
	} else {
		inMemory = s.res.grow(size)
	}
	if inMemory {
		g.batches = append(g.batches, heldBatch{rec: out, size: size})
		return nil
	}
	defer out.Release()
	if s.spill == nil {
		sp, err := newSpillFile(s.tempDir, s.mem, "order", "restoring dataset order")
		if err != nil {
			return err
		}
		s.spill = sp
	}
	off, n, err := s.spill.write(out)
	if err != nil {
		return err
	}
	g.batches = append(g.batches, heldBatch{off: off, n: n})
	return nil
}

// end is what Next returns once the input ended and nothing due is
// left: io.EOF, or the error of a stream whose positions leave a gap.
func (s *positionSource) end() error {
	if len(s.groups) == 0 {
		return io.EOF
	}
	first := int64(-1)
	for grp := range s.groups {
		if first < 0 || grp < first {
			first = grp
		}
	}
	if s.mode == keepPositions || first == s.due {
		return fmt.Errorf("input: the stream ended before the last batch of group %d (positions in %s)", first, PositionKey)
	}
	return fmt.Errorf("input: the stream ended with no batch of group %d, though group %d came (positions in %s)", s.due, first, PositionKey)
}

func (s *positionSource) Close() error {
	for _, g := range s.groups {
		for _, h := range g.batches {
			if h.rec != nil {
				h.rec.Release()
			}
		}
	}
	s.groups = nil
	s.res.free()
	var err error
	if s.spill != nil {
		err = s.spill.close()
		s.spill = nil
	}
	return errors.Join(s.src.Close(), err)
}

// spillFile holds batches waiting for their turn, each as an Arrow IPC
// stream of its own (dictionaries with it) at an offset.
type spillFile struct {
	f   *os.File
	w   *bufio.Writer
	off int64
	mem memory.Allocator
	// what the file is for, in errors
	what string
}

// newSpillFile makes a spill file named sluice-NAME-*.arrows in dir; what
// says what it is for in errors.
func newSpillFile(dir string, mem memory.Allocator, name, what string) (*spillFile, error) {
	f, err := spillfile.Create(dir, "sluice-"+name+"-*.arrows")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return &spillFile{f: f, w: bufio.NewWriterSize(f, 1<<20), mem: mem, what: what}, nil
}

func (s *spillFile) write(rec arrow.RecordBatch) (off, n int64, err error) {
	cw := &countingWriter{w: s.w}
	w := ipc.NewWriter(cw, ipc.WithSchema(rec.Schema()), ipc.WithAllocator(s.mem))
	err = w.Write(rec)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.w.Flush()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: spill: %w", s.what, err)
	}
	off = s.off
	s.off += cw.n
	return off, cw.n, nil
}

// read returns the batch spilled at off, with schema sc.
func (s *spillFile) read(off, n int64, sc *arrow.Schema) (arrow.RecordBatch, error) {
	r, err := ipc.NewReader(io.NewSectionReader(s.f, off, n), ipc.WithAllocator(s.mem))
	if err != nil {
		return nil, fmt.Errorf("%s: spill: %w", s.what, err)
	}
	defer r.Release()
	if !r.Next() {
		err := r.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%s: spill: %w", s.what, err)
	}
	rec := r.RecordBatch()
	return array.NewRecordBatch(sc, rec.Columns(), rec.NumRows()), nil
}

// doneWriting drops the write buffer (each write flushes it) of a file
// that is only read from now on.
func (s *spillFile) doneWriting() { s.w = nil }

func (s *spillFile) close() error {
	return spillfile.Remove(s.f)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// positionMapper runs the per-batch stages of a pipeline that passes
// positions on: each output batch carries its input's position, and a
// last batch the stages empty still goes out, empty, to say where its
// group ends.
type positionMapper struct {
	mappers []mapper
	out     *arrow.Schema
	mem     memory.Allocator
}

func (m *positionMapper) mapBatch(ctx context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	pos, ok, err := PositionOf(in)
	if err != nil {
		return nil, err
	}
	cur := in
	cur.Retain()
	for _, mp := range m.mappers {
		out, err := mp.mapBatch(ctx, cur)
		cur.Release()
		if err != nil {
			return nil, err
		}
		if cur = out; cur == nil {
			break
		}
	}
	if !ok {
		return cur, nil
	}
	if cur == nil {
		if !pos.Last {
			return nil, nil
		}
		b := array.NewRecordBuilder(m.mem, m.out)
		cur = b.NewRecordBatch()
		b.Release()
	}
	defer cur.Release()
	return WithPosition(cur, pos), nil
}
