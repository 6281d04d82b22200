package fetch

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// linkModel is what a Fetcher has learned about its link: first-byte
// latencies and per-request throughput from the last few hundred requests,
// and the aggregate throughput that drives the in-flight limit. It is
// shared by every plan of the Fetcher.
type linkModel struct {
	prior     estimates
	maxLimit  int
	samplesMu sync.Mutex
	ttfb      ring[time.Duration]
	rate      ring[float64] // bytes per second after the first byte
	est       estimates
	dirty     bool

	// In-flight limit, adjusted once per window.
	slots     slots
	ctlMu     sync.Mutex
	winStart  time.Time
	winBytes  int64   // delivered bytes at winStart
	ticks     int     // monitor ticks in this window
	busyTicks int     // ticks at which a plan waited for a slot
	best      float64 // aggregate bytes per second at bestLimit
	bestLimit int
	holding   int     // windows since the limit last changed for good
	partBytes float64 // moving average of request sizes
	delivered int64   // all bytes delivered by all plans
}

// estimates are the link figures the scheduler decides with.
type estimates struct {
	ttfb50, ttfb95, ttfb99 time.Duration
	rate50                 float64
	measured               bool
}

// minSamples is how many requests must have been measured before the
// measurements replace the priors.
const minSamples = 8

func newLinkModel(o Options) *linkModel {
	p99 := 5 * o.TTFB // an unmeasured link gets a generous tail
	prior := estimates{ttfb50: o.TTFB, ttfb95: p99 * 3 / 4, ttfb99: p99, rate50: o.StreamRate}
	l := &linkModel{prior: prior, est: prior, maxLimit: o.MaxInFlight, winStart: time.Now()}
	l.ttfb.init(256)
	l.rate.init(256)
	l.slots.limit = o.InFlight
	l.slots.wake = make(chan struct{})
	return l
}

func (l *linkModel) addTTFB(d time.Duration) {
	l.samplesMu.Lock()
	l.ttfb.add(d)
	l.dirty = true
	l.samplesMu.Unlock()
}

// addRate records one request's throughput once its body is done; short
// bodies say more about latency than bandwidth and are left out.
func (l *linkModel) addRate(bytes int64, d time.Duration) {
	if bytes < 256<<10 || d <= 0 {
		return
	}
	l.samplesMu.Lock()
	l.rate.add(float64(bytes) / d.Seconds())
	l.dirty = true
	l.samplesMu.Unlock()
}

func (l *linkModel) estimates() estimates {
	l.samplesMu.Lock()
	defer l.samplesMu.Unlock()
	if !l.dirty {
		return l.est
	}
	l.dirty = false
	e := l.prior
	if l.ttfb.len() >= minSamples {
		t := l.ttfb.sorted()
		e.ttfb50, e.ttfb95, e.ttfb99 = quantile(t, 0.5), quantile(t, 0.95), quantile(t, 0.99)
		e.measured = true
	}
	if l.rate.len() >= minSamples {
		e.rate50 = quantile(l.rate.sorted(), 0.5)
	}
	l.est = e
	return e
}

// hole is the gap worth reading through rather than paying another first
// byte: the bytes one stream delivers in one first-byte latency, within
// [lo, hi].
func (e estimates) hole(lo, hi int64) int64 {
	h := e.ttfb50.Seconds() * e.rate50
	return int64(math.Max(float64(lo), math.Min(float64(hi), h)))
}

// stallAfter is how long a part may go without a byte before a duplicate
// request is started. Waiting for a first byte, that is three first-byte
// p99s, so the tail of a healthy latency distribution is left alone while
// the worst (S3's reach seconds) are raced. Once bytes flow they come
// every millisecond or so, and a gap of 100ms is already far out; that
// floor, also for the first byte, keeps a busy CPU from looking like a
// stalled link.
func (e estimates) stallAfter(firstByte bool) time.Duration {
	if firstByte {
		return min(max(3*e.ttfb99, 100*time.Millisecond), 10*time.Second)
	}
	return max(2*e.ttfb50, 100*time.Millisecond)
}

// slowAfter is how long a request of n bytes may take before it counts as
// a straggler: three times what a slow-but-normal one takes.
func (e estimates) slowAfter(n int64) time.Duration {
	typical := e.ttfb95 + time.Duration(float64(n)/e.rate50*float64(time.Second))
	return max(3*typical, 100*time.Millisecond)
}

// delivered counts bytes handed to units, for the aggregate throughput.
func (l *linkModel) addDelivered(n int64) {
	l.ctlMu.Lock()
	l.delivered += n
	l.ctlMu.Unlock()
}

// tick is called by every running plan's monitor. Once per window (long
// enough for a typical request to finish twice) it measures the aggregate
// throughput and probes the in-flight limit like BBR's startup: raise it
// by a quarter; if the next window's throughput rose by 5 %, keep it and
// raise again, otherwise go back to the limit that gave the best and hold.
// The limit never drops below what keeps 2.5 x measured bandwidth x
// first-byte latency in flight.
// Every few windows of holding it probes again, since links change.
// Windows in which no plan waited for a slot say nothing about the limit
// (the consumer or the budget was the bottleneck) and are skipped.
func (l *linkModel) tick(now time.Time, waiting bool) {
	l.ctlMu.Lock()
	defer l.ctlMu.Unlock()
	l.ticks++
	if waiting {
		l.busyTicks++
	}
	e := l.estimates()
	typical := e.ttfb50 + time.Duration(l.partBytes/e.rate50*float64(time.Second))
	window := max(100*time.Millisecond, 8*e.ttfb50, 2*typical)
	dt := now.Sub(l.winStart)
	if dt < window {
		return
	}
	rate := float64(l.delivered-l.winBytes) / dt.Seconds()
	busy := l.busyTicks*2 >= l.ticks
	l.winStart, l.winBytes, l.ticks, l.busyTicks = now, l.delivered, 0, 0
	if !busy {
		return
	}
	limit := l.slots.getLimit()
	next := limit
	raise := min(l.maxLimit, limit+max(2, limit/4))
	switch {
	case l.best == 0 || rate > l.best*1.05:
		// The first window, or the last raise paid off: raise again.
		l.best, l.bestLimit = rate, limit
		l.holding = 0
		next = raise
	case limit > l.bestLimit:
		// The raise did not pay off: back to what did, and hold.
		next = l.bestLimit
		l.holding = 1
	default:
		l.holding++
		l.best = max(l.best, rate)
		if l.holding >= probeEvery {
			l.best, l.bestLimit, l.holding = rate, limit, 0
			next = raise
		}
	}
	// Whatever the probing says, keep 2.5 bandwidth-delay products of
	// bytes in flight (Polars' rule): with small requests, first-byte
	// latency dominates and the limit must be well above the raise steps.
	if l.partBytes > 0 {
		bdp := rate * e.ttfb50.Seconds() * 2.5 / l.partBytes
		next = max(next, min(l.maxLimit, int(math.Ceil(bdp))))
	}
	if next != limit {
		l.slots.setLimit(next)
	}
}

// probeEvery is how many windows the limit holds before probing again.
const probeEvery = 10

// addPart records the size of a request being issued; the typical size
// sets how long a measuring window must be.
func (l *linkModel) addPart(n int64) {
	l.ctlMu.Lock()
	if l.partBytes == 0 {
		l.partBytes = float64(n)
	}
	l.partBytes += (float64(n) - l.partBytes) / 16
	l.ctlMu.Unlock()
}

// slots bounds the requests in flight across the plans of a Fetcher. The
// limit changes while requests wait.
type slots struct {
	mu      sync.Mutex
	used    int
	limit   int
	waiting int
	wake    chan struct{} // closed when a slot frees or the limit grows
}

func (s *slots) acquire(ctx context.Context) error {
	s.mu.Lock()
	for s.used >= s.limit {
		s.waiting++
		ch := s.wake
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			s.waiting--
			s.mu.Unlock()
			return context.Cause(ctx)
		}
		s.mu.Lock()
		s.waiting--
	}
	s.used++
	s.mu.Unlock()
	return nil
}

func (s *slots) release() {
	s.mu.Lock()
	s.used--
	s.broadcast()
	s.mu.Unlock()
}

func (s *slots) broadcast() {
	close(s.wake)
	s.wake = make(chan struct{})
}

func (s *slots) setLimit(n int) {
	s.mu.Lock()
	if n > s.limit {
		s.broadcast()
	}
	s.limit = n
	s.mu.Unlock()
}

func (s *slots) getLimit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit
}

func (s *slots) hasWaiters() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting > 0
}

// ring keeps the last len(buf) samples.
type ring[T int64 | float64 | time.Duration] struct {
	buf []T
	n   int // samples ever added
}

func (r *ring[T]) init(n int) { r.buf = make([]T, n) }

func (r *ring[T]) add(v T) {
	r.buf[r.n%len(r.buf)] = v
	r.n++
}

func (r *ring[T]) len() int { return min(r.n, len(r.buf)) }

func (r *ring[T]) sorted() []T {
	s := slices.Clone(r.buf[:r.len()])
	slices.Sort(s)
	return s
}

// quantile of sorted samples, nearest rank.
func quantile[T int64 | float64 | time.Duration](s []T, q float64) T {
	if len(s) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
