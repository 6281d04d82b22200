package fetch

import (
	"context"
	"errors"
	"io"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/sluice-data/sluice/store"
)

// errClosed is the cause a plan is cancelled with by Close.
var errClosed = errors.New("fetch: plan closed")

// Plan is a running fetch: units come out of Next in request order while
// later ones are still being fetched. Close it when done, or to stop early.
type Plan struct {
	f      *Fetcher
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	queue   []*Unit // admitted and not yet returned by Next
	srcDone bool
	held    int64 // bytes of pages held by admitted, unreleased units
	// inflight is the bytes requested and not yet arrived, and window how
	// many may be: see waitWindow. windowWait: the scheduler waits for it.
	inflight, window int64
	windowWait       bool
	// lead is how many bytes the plan may hold (admitted, not released)
	// before Options.Memory does: it grows only when the consumer waits
	// for a unit it held back (see growLead), so a consumer that never
	// waits is not raced by fetching far ahead of it. leadGen counts the
	// times it grew.
	lead    int64
	leadGen int
	next    *Unit // the unit waiting to be admitted, if any
	// nextWaiting counts the consumers waiting in Next for a unit.
	nextWaiting int
	active      map[*part]struct{}
	wake        chan struct{} // closed (and replaced) on every change a waiter may want

	objects map[string]*object // by key; the scheduler goroutine's alone

	stats planStats
}

func newPlan(ctx context.Context, f *Fetcher) *Plan {
	ctx, cancel := context.WithCancelCause(ctx)
	p := &Plan{
		f:       f,
		ctx:     ctx,
		cancel:  cancel,
		active:  map[*part]struct{}{},
		wake:    make(chan struct{}),
		objects: map[string]*object{},
		window:  f.initWindow,
		lead:    f.initWindow,
	}
	p.stats.init()
	return p
}

// broadcast wakes every waiter; p.mu must be held.
func (p *Plan) broadcast() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// wait gives up p.mu, which must be held, until the next broadcast and
// takes it again; it returns false, with p.mu not held, if the plan ends
// first.
func (p *Plan) wait() bool {
	ch := p.wake
	p.mu.Unlock()
	select {
	case <-ch:
	case <-p.ctx.Done():
		return false
	}
	p.mu.Lock()
	return true
}

// fail stops the plan; the first error is the one every waiter gets.
func (p *Plan) fail(err error) { p.cancel(err) }

// err is why the plan stopped, or nil while it runs.
func (p *Plan) err() error {
	if p.ctx.Err() == nil {
		return nil
	}
	return context.Cause(p.ctx)
}

// schedule admits units in order as memory allows and issues their parts
// as slots allow.
func (p *Plan) schedule(reqs iter.Seq2[Request, error]) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		p.srcDone = true
		p.broadcast()
		p.mu.Unlock()
	}()
	index := 0
	for req, err := range reqs {
		if err != nil {
			p.fail(err)
			return
		}
		if p.ctx.Err() != nil {
			return
		}
		u, err := p.newUnit(req, index)
		if err != nil {
			p.fail(err)
			return
		}
		index++
		if !p.reserve(u) {
			return
		}
		// Given bytes are copied in before the consumer can have the unit
		// (and release it, taking its pages).
		for _, pt := range u.parts {
			if pt.given != nil {
				p.give(pt)
			}
		}
		p.mu.Lock()
		p.queue = append(p.queue, u)
		p.broadcast()
		p.mu.Unlock()
		for _, pt := range u.parts {
			if pt.had {
				continue
			}
			if !p.waitWindow(pt.n) {
				return
			}
			if err := p.f.link.slots.acquire(p.ctx); err != nil {
				return
			}
			p.launch(pt)
		}
	}
}

func (p *Plan) newUnit(req Request, index int) (*Unit, error) {
	st := p.f.st
	if err := req.validate(st); err != nil {
		return nil, err
	}
	obj := p.objects[req.Key]
	if obj == nil {
		obj = &object{key: req.Key, url: st.URL(req.Key), etag: req.ETag}
		p.objects[req.Key] = obj
	} else if req.ETag != "" {
		if old, ok := obj.pin(req.ETag); !ok {
			return nil, &ChangedError{URL: obj.url, Old: old, New: req.ETag}
		}
	}
	hole := p.f.link.estimates().hole(p.f.minHole, p.f.maxHole)
	p.stats.hole.Store(hole)
	above, maxPart := p.f.splitAbove, p.f.maxPart
	if index == 0 {
		// The first unit is what the consumer waits for before it can
		// start: its parts download in parallel, at the link's rate
		// rather than one stream's.
		above, maxPart = p.f.headSplit, p.f.headPart
	}
	spans := split(coalesce(req.Ranges, boundHole(req.Ranges, hole)), above, maxPart)
	u := &Unit{p: p, key: req.Key, tag: req.Tag, index: index, obj: obj,
		ranges: append([]store.Range(nil), req.Ranges...)}
	var base int64
	for _, s := range spans {
		pt := &part{u: u, off: s.off, n: s.n, base: base, doneCh: make(chan struct{})}
		if s.off >= req.HaveOff && s.off+s.n <= req.HaveOff+int64(len(req.Have)) {
			pt.given = req.Have[s.off-req.HaveOff : s.off-req.HaveOff+s.n]
		}
		u.parts = append(u.parts, pt)
		base += s.n
	}
	u.size = base
	for _, r := range req.Ranges {
		p.stats.requested.Add(max(r.Len, 0))
	}
	p.stats.planned.Add(base)
	return u, nil
}

// give completes a part from the bytes its Request came with: no request,
// no slot, nothing in flight.
func (p *Plan) give(pt *part) {
	u := pt.u
	u.copyIn(pt.base, pt.given)
	p.stats.given.Add(pt.n)
	pt.had = true
	pt.mu.Lock()
	pt.given = nil
	pt.wm = pt.n
	pt.progressAt = time.Now()
	pt.finishLocked(nil)
	pt.mu.Unlock()
	p.mu.Lock()
	p.stats.lastDone = time.Now()
	p.mu.Unlock()
}

// reserve waits until the unit fits in the budget, then takes its pages.
// A unit larger than the whole budget is admitted once nothing else is
// held, so the plan always makes progress.
func (p *Plan) reserve(u *Unit) bool {
	pg := p.f.pages
	need := p.pagesOf(u)
	// fits: within the budget and the lead, or nothing else held.
	fits := func() bool { return p.held == 0 || p.held+need <= min(p.f.opts.Memory, max(p.lead, need)) }
	start := time.Now()
	waited := false
	p.mu.Lock()
	for !fits() {
		waited = true
		if !u.led && p.held+need <= p.f.opts.Memory {
			u.led, u.gen = true, p.leadGen // held back by the lead alone
		}
		p.next = u
		if p.nextWaiting > 0 {
			// A consumer already waits in Next for this unit: it is
			// ahead of what the plan admitted (it checked before p.next
			// was set).
			p.growLead(u)
			if fits() {
				break
			}
		}
		if !p.wait() {
			return false
		}
	}
	p.next = nil
	p.held += need
	p.stats.memHigh = max(p.stats.memHigh, p.held)
	p.mu.Unlock()
	if waited {
		p.stats.waitMemory.Add(int64(time.Since(start)))
	}
	u.held = need
	var fresh int64
	u.pages, fresh = pg.get(pg.count(u.size))
	p.stats.allocated.Add(fresh)
	return true
}

// pagesOf is the memory unit u holds once admitted: its bytes in whole
// pages.
func (p *Plan) pagesOf(u *Unit) int64 {
	return int64(p.f.pages.count(u.size)) * int64(p.f.pages.size)
}

// growLead doubles the lead, up to the memory budget, when the consumer
// waits for unit u although the lead held u back: reading further ahead
// would have had its bytes there in time. Waits for units admitted
// without delay (the first ones, whose first bytes everyone waits for) do
// not count, nor more than one per growth, so the lead grows once for
// each time the consumer catches up with it. Nothing grows it while the
// consumer keeps up: on a link faster than the consumer, the units at the
// head then get the link and the machine rather than sharing them with
// every unit behind, and the budget is not filled for nothing. p.mu held.
func (p *Plan) growLead(u *Unit) {
	if !u.led || u.gen != p.leadGen || p.lead >= p.f.opts.Memory {
		return
	}
	// At least two such units: with row groups larger than the lead
	// (34 MiB of lineitem against 16), doubling alone admitted one unit at
	// a time for the first three growths, and the link stood idle while
	// each was decoded.
	p.lead = min(max(2*p.lead, 2*p.pagesOf(u)), p.f.opts.Memory)
	p.leadGen++
	p.broadcast()
}

// unreserve gives a released unit's memory back to the budget.
func (p *Plan) unreserve(n int64) {
	p.mu.Lock()
	p.held -= n
	p.broadcast()
	p.mu.Unlock()
}

// Next returns the next unit in request order, as soon as its requests are
// issued (its bytes may still be arriving; ReadAt and WriteTo wait for
// them). It returns io.EOF after the last unit, and the plan's error as
// soon as the plan fails, even if units before the failure were complete.
// The caller must Release every unit it gets.
func (p *Plan) Next(ctx context.Context) (*Unit, error) {
	start := time.Now()
	defer func() { p.stats.waitConsumer.Add(int64(time.Since(start))) }()
	p.mu.Lock()
	for {
		if err := p.err(); err != nil {
			p.mu.Unlock()
			return nil, err
		}
		if len(p.queue) > 0 {
			u := p.queue[0]
			p.queue[0] = nil
			p.queue = p.queue[1:]
			u.handed = true
			p.mu.Unlock()
			p.stats.units.Add(1)
			return u, nil
		}
		if p.srcDone {
			p.mu.Unlock()
			return nil, io.EOF
		}
		if p.next != nil {
			// The consumer is ahead of what the plan admitted.
			p.growLead(p.next)
		}
		ch := p.wake
		p.nextWaiting++
		p.mu.Unlock()
		select {
		case <-ch:
		case <-p.ctx.Done():
		case <-ctx.Done():
			p.mu.Lock()
			p.nextWaiting--
			p.mu.Unlock()
			return nil, context.Cause(ctx)
		}
		p.mu.Lock()
		p.nextWaiting--
	}
}

// Close stops the plan and waits for all its goroutines. Units already
// returned by Next stay readable for the bytes that had arrived, and must
// still be released (their memory is only reused after that); units never
// returned are released here. Close is safe to call more than once.
func (p *Plan) Close() {
	p.cancel(errClosed)
	p.wg.Wait()
	p.mu.Lock()
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	for _, u := range q {
		u.Release()
	}
}

// waitWindow waits until n more bytes fit in the plan's window of bytes
// requested and not yet arrived (or nothing is outstanding). Requests
// running at once share the link, so launching every admitted unit at
// once would have the first arrive only when nearly all do; within the
// window, the units at the head get the bandwidth and the consumer starts
// on them while the rest stream in. The window starts at a few requests'
// worth and grows by every byte that arrives (TCP's slow start: it doubles
// each time a window's worth has arrived, however large the requests), up
// to the memory budget, so a long read soon has all the budget allows in
// flight.
func (p *Plan) waitWindow(n int64) bool {
	start := time.Now()
	waited := false
	p.mu.Lock()
	for p.inflight > 0 && p.inflight+n > p.window {
		waited = true
		p.windowWait = true
		if !p.wait() {
			return false
		}
	}
	p.windowWait = false
	p.inflight += n
	p.mu.Unlock()
	if waited {
		p.stats.waitWindow.Add(int64(time.Since(start)))
	}
	return true
}

// arrived takes n bytes that arrived off the outstanding ones and widens
// the window by them.
func (p *Plan) arrived(n int64) {
	p.mu.Lock()
	p.inflight -= n
	p.window = min(p.window+n, max(p.f.opts.Memory, p.f.initWindow))
	if p.windowWait {
		p.broadcast()
	}
	p.mu.Unlock()
}

// launch starts the first request of a part; the caller holds a slot for
// it and has counted it in flight (waitWindow).
func (p *Plan) launch(pt *part) {
	pt.mu.Lock()
	pt.started = time.Now()
	a := pt.newAttempt(p.ctx, false)
	pt.mu.Unlock()
	p.f.link.addPart(pt.n)
	p.mu.Lock()
	p.active[pt] = struct{}{}
	pt.inflight = true
	p.mu.Unlock()
	p.wg.Add(1)
	go p.run(pt, a, true)
}

// partDone takes a finished part off the monitor's list, and the bytes
// of it that will not arrive (it was released first) off the outstanding
// ones.
func (p *Plan) partDone(pt *part) {
	pt.mu.Lock()
	left := pt.n - pt.wm // final: nothing commits after the part finished
	pt.mu.Unlock()
	p.mu.Lock()
	delete(p.active, pt)
	if pt.inflight {
		pt.inflight = false
		p.inflight -= left
		if p.windowWait {
			p.broadcast()
		}
	}
	p.stats.lastDone = time.Now()
	p.mu.Unlock()
}

// monitor re-issues stragglers and feeds the in-flight controller, until
// every part of the plan has finished or the plan stops.
func (p *Plan) monitor() {
	defer p.wg.Done()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	var parts []*part
	for {
		select {
		case <-p.ctx.Done():
			return
		case now := <-t.C:
			p.f.link.tick(now, p.f.link.slots.hasWaiters())
			parts = parts[:0]
			p.mu.Lock()
			if p.srcDone && len(p.active) == 0 {
				p.mu.Unlock()
				return
			}
			for pt := range p.active {
				parts = append(parts, pt)
			}
			p.mu.Unlock()
			e := p.f.link.estimates()
			peers := peerRate(parts, now)
			for _, pt := range parts {
				p.checkStraggler(pt, now, e, peers, len(parts))
			}
		}
	}
}

// maxHedges bounds the duplicates started for one part.
const maxHedges = 3

// minPeers is how many parts must be running for their median rate to
// say what a typical request gets now.
const minPeers = 4

// peerRate is the median rate (bytes committed per second since launch)
// of the parts that have been running for at least 100ms, or 0 when
// fewer than minPeers have. On a link shared by many requests each gets a
// share well below one stream's rate, and only a part far behind its
// peers is a straggler.
func peerRate(parts []*part, now time.Time) float64 {
	var rates []float64
	for _, pt := range parts {
		if r, ok := pt.rate(now); ok {
			rates = append(rates, r)
		}
	}
	if len(rates) < minPeers {
		return 0
	}
	slices.Sort(rates)
	return quantile(rates, 0.5)
}

// rate is the part's bytes committed per second since launch, once it
// has run for 100ms.
func (pt *part) rate(now time.Time) (float64, bool) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	d := now.Sub(pt.started)
	if pt.done || pt.started.IsZero() || d < 100*time.Millisecond {
		return 0, false
	}
	return float64(pt.wm) / d.Seconds(), true
}

// checkStraggler starts a duplicate request for a part that has made no
// progress for several first-byte p99s, or that is far slower than a
// typical request of its size (and, with enough parts running, than its
// peers: peers is their median rate, see peerRate). The duplicate resumes
// from the bytes already committed; both race and the first to finish
// wins. When two are already running, the older is cancelled to make room.
func (p *Plan) checkStraggler(pt *part, now time.Time, e estimates, peers float64, running int) {
	pt.mu.Lock()
	if pt.done || len(pt.live) == 0 || pt.hedges >= maxHedges {
		pt.mu.Unlock()
		return
	}
	// The part's last sign of life: a byte, or the newest request.
	last, firstByte := pt.progressAt, false
	for _, a := range pt.live {
		if a.start.After(last) {
			last, firstByte = a.start, true
		}
	}
	stalled := now.Sub(last) > e.stallAfter(firstByte)
	slow := e.measured && pt.hedges == 0 && now.Sub(pt.started) > e.slowAfter(pt.n)
	if slow && peers == 0 && running >= minPeers {
		// The link is shared by enough requests that none gets one
		// stream's rate, but they started too recently (the window
		// launches them as others finish) to say what a typical one gets:
		// only a stall is raced.
		slow = false
	}
	if slow && peers > 0 {
		// Slower than one stream should be, but so is every request on
		// a shared link: a duplicate would only take bandwidth from the
		// others. Only a part at a third of its peers' rate is raced.
		slow = float64(pt.wm)/now.Sub(pt.started).Seconds()*3 < peers
	}
	if !stalled && !slow {
		pt.mu.Unlock()
		return
	}
	if len(pt.live) >= 2 {
		pt.live[0].cancel()
		pt.live = pt.live[1:]
	}
	pt.hedges++
	a := pt.newAttempt(p.ctx, true)
	a.onStall = stalled
	pt.mu.Unlock()
	p.stats.hedges.Add(1)
	p.wg.Add(1)
	go p.run(pt, a, false)
}
