package fanout

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/store"
)

// input is one Arrow IPC stream in the store: bytes [off, off+n) of key
// (an object of size bytes), whose CRC-32C is crc; name names it in
// errors.
type input struct {
	key          string
	off, n, size int64
	crc          uint32
	name         string
	// from, when set, is the committed output the input is part of: a
	// read that finds it missing or corrupt fails with a LostInputError.
	from *Lost
}

// readBudget bounds the bytes a set of streams holds fetched and not yet
// decoded, whatever the size of what it reads: the driver's memory for
// the tasks' outputs, and a reducer's for its parts (less within a
// smaller Options.Memory).
const readBudget = 64 << 20

// maxChunk is the most of an input fetched as one unit (a variable for
// tests that cut small inputs into many chunks).
var maxChunk int64 = 8 << 20

// streams returns a source for each input, reading it in chunks through
// fetch (retried, checked against its checksum as it arrives), holding
// at most budget bytes fetched and not yet decoded, and done,
// which ends the reads and returns the first error a read met: exec's
// IPC reader reports a stream that fails before its first byte as an
// empty input, so callers prefer this error to the run's.
//
// With together false the sources are read one after another (exec.Concat)
// and one plan fetches every chunk ahead in that order; with true they
// are read side by side (a merge) and each has a plan of its own, with
// its share of the budget.
func (j *job) streams(ctx context.Context, ins []input, together bool, budget int64) ([]exec.SourceStage, func() error) {
	srcs, rs := j.streamSet(ctx, ins, together, budget)
	return srcs, rs.close
}

// streamSet is streams, with the set itself.
func (j *job) streamSet(ctx context.Context, ins []input, together bool, budget int64) ([]exec.SourceStage, *streamSet) {
	rs := &streamSet{ctx: ctx, j: j, first: &firstError{}}
	if together {
		budget = max(budget/int64(max(len(ins), 1)), 1<<20)
	}
	chunk := min(maxChunk, budget/2)
	srcs := make([]exec.SourceStage, len(ins))
	var reqs []fetch.Request
	for i, in := range ins {
		r := &streamReader{set: rs, in: in, crc: crc32.New(castagnoli), pos: in.off}
		var mine []fetch.Request
		for off := in.off; off < in.off+in.n; off += chunk {
			n := min(chunk, in.off+in.n-off)
			mine = append(mine, fetch.Request{Key: in.key, Ranges: []store.Range{{Off: off, Len: n}}, Size: in.size})
		}
		r.chunks = len(mine)
		if together {
			r.plan = &lazyPlan{set: rs, reqs: mine, budget: budget}
		} else {
			reqs = append(reqs, mine...)
		}
		srcs[i] = exec.ReadIPC(r)
		rs.readers = append(rs.readers, r)
	}
	if !together {
		shared := &lazyPlan{set: rs, reqs: reqs, budget: budget}
		for _, r := range rs.readers {
			r.plan = shared
		}
	}
	return srcs, rs
}

type streamSet struct {
	ctx     context.Context
	j       *job
	first   *firstError
	mu      sync.Mutex
	plans   []*fetch.Plan
	readers []*streamReader
}

// checkPartRead is for a read that failed elsewhere (the IPC decoder)
// with no error of its own: an input read in part was handed on before
// its checksum could be checked, so its other chunks are read now, and
// a corrupt or vanished committed output is reported as a
// LostInputError. Sequential sets (together false) only.
func (s *streamSet) checkPartRead() {
	if s.first.get() != nil {
		return
	}
	for _, r := range s.readers {
		if r.in.from == nil || r.pos == r.in.off || r.chunks == 0 {
			continue
		}
		for r.chunks > 0 {
			if err := r.fill(); err != nil {
				s.first.set(r.lost(err))
				return
			}
		}
		return
	}
}

func (s *streamSet) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.plans {
		p.Close()
		s.j.retries.Add(p.Stats().Retries)
	}
	s.plans = nil
	return s.first.get()
}

// lazyPlan starts its fetch plan when first read from.
type lazyPlan struct {
	set    *streamSet
	reqs   []fetch.Request
	budget int64
	plan   *fetch.Plan
}

func (l *lazyPlan) next(ctx context.Context) (*fetch.Unit, error) {
	if l.plan == nil {
		if len(l.reqs) == 0 {
			return nil, errors.New("no bytes to read")
		}
		l.plan = fetch.New(l.set.j.st, fetch.Options{Memory: l.budget}).Plan(ctx, l.reqs)
		l.set.mu.Lock()
		l.set.plans = append(l.set.plans, l.plan)
		l.set.mu.Unlock()
	}
	return l.plan.Next(ctx)
}

// streamReader reads one input's chunks in order, holding one at a time.
type streamReader struct {
	set    *streamSet
	in     input
	plan   *lazyPlan
	chunks int   // left to read
	pos    int64 // where the next chunk starts
	crc    hash32
	buf    []byte
	at     int
}

type hash32 interface {
	io.Writer
	Sum32() uint32
}

func (r *streamReader) Read(p []byte) (int, error) {
	for r.at == len(r.buf) {
		if r.chunks == 0 {
			return 0, io.EOF
		}
		if err := r.fill(); err != nil {
			return 0, r.set.first.set(r.lost(err))
		}
	}
	n := copy(p, r.buf[r.at:])
	r.at += n
	if r.at == len(r.buf) && r.chunks == 0 {
		// Read whole: its last chunk's buffer goes now, as the IPC
		// reader stops at the end-of-stream marker without another
		// Read, and a reducer reads many inputs one after another.
		r.buf, r.at = nil, 0
	}
	return n, nil
}

// errChecksum is a chunk whose bytes are not what the index says.
var errChecksum = errors.New("checksum mismatch")

// lost is err, as a LostInputError when it says a committed output's
// object is gone, corrupt or cut short. A fetch plan reads ahead, so a
// read of another input's object may have failed: the error's URL says
// whose.
func (r *streamReader) lost(err error) error {
	if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, errChecksum) && !errors.Is(err, fetch.ErrPastEnd) {
		return err
	}
	from := r.in.from
	if se := (*store.Error)(nil); errors.As(err, &se) && se.URL != r.set.j.st.URL(r.in.key) {
		from = nil
		for _, o := range r.set.readers {
			if r.set.j.st.URL(o.in.key) == se.URL {
				from = o.in.from
				break
			}
		}
	}
	if from == nil {
		return err
	}
	return &LostInputError{Lost: *from, Err: err}
}

// fill reads the next chunk; the last one is checked against the
// input's checksum before any of its bytes are handed on.
func (r *streamReader) fill() error {
	unit, err := r.plan.next(r.set.ctx)
	if err != nil {
		return err
	}
	defer unit.Release()
	rg := unit.Ranges()[0]
	if unit.Key() != r.in.key || rg.Off != r.pos {
		return fmt.Errorf("%s: read out of order", r.in.name)
	}
	if int64(cap(r.buf)) < rg.Len {
		r.buf = make([]byte, rg.Len)
	}
	r.buf, r.at = r.buf[:rg.Len], 0
	if _, err := unit.ReadAt(r.buf, rg.Off); err != nil && err != io.EOF {
		return err
	}
	r.crc.Write(r.buf)
	r.pos += rg.Len
	r.chunks--
	if r.chunks == 0 {
		if got := r.crc.Sum32(); got != r.in.crc {
			return fmt.Errorf("%s: checksum %08x, the index says %08x: %w", r.in.name, got, r.in.crc, errChecksum)
		}
	}
	return nil
}

type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
	return err
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
