package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/sluice-data/sluice/store"
)

// errReleased ends the parts of a unit released before its bytes arrived.
var errReleased = errors.New("fetch: unit already released")

// Unit is one Request being fetched: the bytes of its ranges (and of the
// holes between them that were worth reading through), in pages the plan
// owns until Release. Its methods are safe for concurrent use, except that
// Release must come after the last read.
type Unit struct {
	p      *Plan
	key    string
	tag    any
	index  int
	obj    *object
	ranges []store.Range
	parts  []*part // sorted by offset; parts of one span are adjacent
	size   int64   // bytes of all parts
	pages  [][]byte
	held   int64 // bytes of pages charged to the budget

	handed   bool // returned by Next; under p.mu
	released bool // under p.mu
	// led: admission waited for the plan's lead (not the budget), at
	// lead generation gen; see Plan.growLead. Under p.mu.
	led bool
	gen int
}

// Key is the object's key.
func (u *Unit) Key() string { return u.key }

// Tag is the Request's Tag.
func (u *Unit) Tag() any { return u.tag }

// Index is the unit's position in the plan, from 0.
func (u *Unit) Index() int { return u.index }

// Ranges are the Request's ranges, as given.
func (u *Unit) Ranges() []store.Range { return u.ranges }

// ETag is the object version every unit of this key is read from; empty
// until the first response of the object arrived (certain after Wait).
func (u *Unit) ETag() string { return u.obj.pinned() }

// Wait blocks until every byte of the unit has arrived, and returns the
// plan's error if it fails first.
func (u *Unit) Wait(ctx context.Context) error {
	for _, pt := range u.parts {
		if err := u.wait(ctx, pt); err != nil {
			return err
		}
	}
	return nil
}

func (u *Unit) wait(ctx context.Context, pt *part) error {
	select {
	case <-pt.doneCh:
		return pt.err
	default:
	}
	start := time.Now()
	defer func() { u.p.stats.waitConsumer.Add(int64(time.Since(start))) }()
	u.p.mu.Lock()
	u.p.growLead(u)
	u.p.mu.Unlock()
	select {
	case <-pt.doneCh:
		return pt.err
	case <-u.p.ctx.Done():
		select {
		case <-pt.doneCh: // it made it before the plan stopped
			return pt.err
		default:
		}
		return u.p.err()
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// locate returns the parts covering [off, end) in order, or an error if
// some byte of it is not in the unit.
func (u *Unit) locate(off, end int64) ([]*part, error) {
	i := sort.Search(len(u.parts), func(i int) bool { return u.parts[i].end() > off })
	j, pos := i, off
	for pos < end {
		if j >= len(u.parts) || u.parts[j].off > pos {
			return nil, fmt.Errorf("fetch: read of [%d, %d) from %s is outside the unit's ranges", off, end, u.obj.url)
		}
		pos = u.parts[j].end()
		j++
	}
	return u.parts[i:j], nil
}

// ReadAt copies bytes of the object at off into p, waiting for them to
// arrive. Every byte asked for must be within the unit's ranges (or a hole
// between them that was fetched). It follows io.ReaderAt: n < len(p) only
// with an error. p is not kept.
func (u *Unit) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if u.isReleased() {
		return 0, errReleased
	}
	end := off + int64(len(p))
	parts, err := u.locate(off, end)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, pt := range parts {
		if err := u.wait(context.Background(), pt); err != nil {
			return n, err
		}
		a, b := max(off+int64(n), pt.off), min(end, pt.end())
		u.copyOut(p[n:n+int(b-a)], pt.base+a-pt.off)
		n += int(b - a)
	}
	return n, nil
}

// WriteTo writes the bytes of the unit's ranges, in the order they were
// requested, to w as they arrive; a consumer that streams (cat, cp) needs
// no copy of its own. Overlapping ranges are written once each.
func (u *Unit) WriteTo(w io.Writer) (int64, error) {
	if u.isReleased() {
		return 0, errReleased
	}
	var n int64
	for _, r := range u.ranges {
		if r.Len <= 0 {
			continue
		}
		parts, err := u.locate(r.Off, r.Off+r.Len)
		if err != nil {
			return n, err
		}
		for _, pt := range parts {
			if err := u.wait(context.Background(), pt); err != nil {
				return n, err
			}
			a, b := max(r.Off, pt.off), min(r.Off+r.Len, pt.end())
			m, err := u.writeOut(w, pt.base+a-pt.off, b-a)
			n += m
			if err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// Release gives the unit's memory back to the plan, for later units. A
// unit released before its bytes arrived stops its requests. The unit must
// not be read after; Release is safe to call more than once.
func (u *Unit) Release() {
	p := u.p
	p.mu.Lock()
	if u.released {
		p.mu.Unlock()
		return
	}
	u.released = true
	p.mu.Unlock()
	for _, pt := range u.parts {
		pt.mu.Lock()
		finished := pt.finishLocked(errReleased)
		pt.mu.Unlock()
		if finished {
			p.partDone(pt)
		}
	}
	// No attempt writes after its part finished (commit checks under the
	// part's lock), so the pages are free for reuse.
	p.f.pages.put(u.pages)
	u.pages = nil
	p.unreserve(u.held)
}

func (u *Unit) isReleased() bool {
	u.p.mu.Lock()
	defer u.p.mu.Unlock()
	return u.released
}

// copyIn, copyOut and writeOut move bytes at offset at of the unit's
// concatenated parts, across page boundaries.
func (u *Unit) copyIn(at int64, b []byte) {
	ps := int64(u.p.f.pages.size)
	for len(b) > 0 {
		n := copy(u.pages[at/ps][at%ps:], b)
		b = b[n:]
		at += int64(n)
	}
}

func (u *Unit) copyOut(b []byte, at int64) {
	ps := int64(u.p.f.pages.size)
	for len(b) > 0 {
		n := copy(b, u.pages[at/ps][at%ps:])
		b = b[n:]
		at += int64(n)
	}
}

func (u *Unit) writeOut(w io.Writer, at, n int64) (int64, error) {
	ps := int64(u.p.f.pages.size)
	var done int64
	for done < n {
		pg := u.pages[at/ps][at%ps:]
		pg = pg[:min(int64(len(pg)), n-done)]
		m, err := w.Write(pg)
		done += int64(m)
		at += int64(m)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// part is one request's worth of a unit: a span of the object, fetched by
// one attempt at a time, or two when a straggler is being raced.
type part struct {
	u      *Unit
	off, n int64 // of the object
	base   int64 // of the unit's pages

	inflight bool // launched and not finished; under the plan's mu
	// given are the part's bytes from its Request's Have, copied in
	// instead of requested (Plan.give); nil once copied, or when none.
	// had says they were; the scheduler's alone.
	given []byte
	had   bool

	mu         sync.Mutex
	wm         int64 // bytes [0, wm) of the part are committed
	done       bool
	err        error // why it finished: nil, or errReleased
	doneCh     chan struct{}
	live       []*attempt
	retries    int
	hedges     int
	started    time.Time // first request
	progressAt time.Time // last committed byte
}

func (pt *part) end() int64 { return pt.off + pt.n }

// attempt is one request for the bytes of a part from some offset on.
type attempt struct {
	ctx    context.Context
	cancel context.CancelFunc
	from   int64 // offset in the part where the request starts
	start  time.Time
	hedge  bool
	// onStall marks a duplicate started because the part stopped; see
	// part.dropFalseAlarms.
	onStall   bool
	committed int64 // bytes this attempt committed; under the part's lock
}

// newAttempt registers an attempt from the committed watermark; pt.mu held.
func (pt *part) newAttempt(ctx context.Context, hedge bool) *attempt {
	ctx, cancel := context.WithCancel(ctx)
	a := &attempt{ctx: ctx, cancel: cancel, from: pt.wm, start: time.Now(), hedge: hedge}
	pt.live = append(pt.live, a)
	return a
}

// forget unregisters a; it reports whether a was still live (the monitor
// may have cancelled and dropped it). pt.mu held.
func (pt *part) forget(a *attempt) bool {
	for i, b := range pt.live {
		if b == a {
			pt.live = append(pt.live[:i], pt.live[i+1:]...)
			return true
		}
	}
	return false
}

// dropFalseAlarms cancels the duplicates started for a stall that have
// delivered nothing, once attempt a delivers again: the stall was a pause
// (a busy CPU, a collection, a slow moment of the server), and racing on
// would read the rest of the part twice. A stall that is real is raced
// again by the monitor. pt.mu held.
func (pt *part) dropFalseAlarms(a *attempt) {
	live := pt.live[:0]
	for _, b := range pt.live {
		if b != a && b.onStall && b.committed == 0 {
			b.cancel()
			continue
		}
		live = append(live, b)
	}
	clear(pt.live[len(live):])
	pt.live = live
}

// finishLocked ends the part, cancelling what is still running; it reports
// whether this call was the one that ended it. pt.mu held.
func (pt *part) finishLocked(err error) bool {
	if pt.done {
		return false
	}
	pt.done, pt.err = true, err
	for _, a := range pt.live {
		a.cancel()
	}
	pt.live = nil
	close(pt.doneCh)
	return true
}

// object is one key of a plan and the version its units are pinned to.
type object struct {
	key, url string
	mu       sync.Mutex
	etag     string
}

func (o *object) pinned() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.etag
}

// pin records etag as the object's version if it has none yet; ok is
// false (with the pinned one) when they differ.
func (o *object) pin(etag string) (old string, ok bool) {
	if etag == "" {
		return "", true // a backend without versions: nothing to compare
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.etag == "" {
		o.etag = etag
	}
	return o.etag, o.etag == etag
}

// ChangedError says an object was replaced (or deleted) while a plan was
// reading it. Nothing of the new version was delivered; errors.Is(err,
// store.ErrPrecondition) holds.
type ChangedError struct {
	URL      string
	Old, New string // New is empty when the object is gone or unknown
	Deleted  bool
}

func (e *ChangedError) Error() string {
	switch {
	case e.Deleted:
		return fmt.Sprintf("%s changed during the read (ETag %s -> deleted)", e.URL, e.Old)
	case e.New == "":
		return fmt.Sprintf("%s changed during the read (ETag %s -> unknown)", e.URL, e.Old)
	}
	return fmt.Sprintf("%s changed during the read (ETag %s -> %s)", e.URL, e.Old, e.New)
}

// Is makes errors.Is(err, store.ErrPrecondition) hold, so store.KindOf
// classifies it as store.KindPrecondition.
func (e *ChangedError) Is(target error) bool { return target == store.ErrPrecondition }
