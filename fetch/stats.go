package fetch

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stats describe a plan so far. Bytes requested are what the consumer
// asked for; planned adds the holes read through; fetched is what came
// off the wire, counting the bytes of retried and duplicated requests that
// were dropped because they had already arrived.
type Stats struct {
	Units          int64 // units returned by Next
	BytesRequested int64
	BytesPlanned   int64
	BytesFetched   int64
	// BytesGiven are the bytes units took from their Requests' Have
	// instead of requesting them (not counted in BytesFetched).
	BytesGiven int64
	Requests   int64 // ranged GETs started: first tries, retries and duplicates
	Retries    int64 // requests started again after an error
	Hedges     int64 // duplicates started for stragglers
	HedgeWins  int64 // parts a duplicate finished first

	// WaitConsumer is how long the consumer was blocked in Next, Wait,
	// ReadAt and WriteTo; WaitMemory how long fetching ahead was held back
	// by the memory budget. A consumer that never waits is the bottleneck.
	WaitConsumer time.Duration
	WaitMemory   time.Duration
	// WaitWindow is how long launching was held back so that the units
	// at the head get the link (see Plan.waitWindow).
	WaitWindow time.Duration

	MemoryHigh int64 // most bytes held at once; at most Options.Memory
	// Lead is the most the plan may hold now (before Options.Memory): it
	// grows from the first window only when the consumer caught up with it.
	Lead           int64
	BytesAllocated int64 // fresh page memory; the rest was reused

	InFlightMax   int // most requests in flight at once
	InFlightLimit int // the adaptive limit (shared by the Fetcher's plans) now
	Hole          int64
	TTFB          Latencies // first-byte latency of each request
	Elapsed       time.Duration
}

// Latencies summarise a set of durations; the quantiles are over the most
// recent 4096.
type Latencies struct {
	Count              int64
	Min, P50, P90, P99 time.Duration
	Max                time.Duration
}

// Add sums two plans' stats (for a command that runs several plans).
// Maxima and latency summaries keep the larger and the later.
func (s *Stats) Add(o Stats) {
	s.Units += o.Units
	s.BytesRequested += o.BytesRequested
	s.BytesPlanned += o.BytesPlanned
	s.BytesFetched += o.BytesFetched
	s.BytesGiven += o.BytesGiven
	s.Requests += o.Requests
	s.Retries += o.Retries
	s.Hedges += o.Hedges
	s.HedgeWins += o.HedgeWins
	s.WaitConsumer += o.WaitConsumer
	s.WaitMemory += o.WaitMemory
	s.WaitWindow += o.WaitWindow
	s.MemoryHigh = max(s.MemoryHigh, o.MemoryHigh)
	s.Lead = max(s.Lead, o.Lead)
	s.BytesAllocated += o.BytesAllocated
	s.InFlightMax = max(s.InFlightMax, o.InFlightMax)
	s.InFlightLimit = o.InFlightLimit
	s.Hole = o.Hole
	if o.TTFB.Count > 0 {
		n := s.TTFB.Count + o.TTFB.Count
		mn := o.TTFB.Min
		if s.TTFB.Count > 0 {
			mn = min(mn, s.TTFB.Min)
		}
		s.TTFB = Latencies{Count: n, Min: mn, P50: o.TTFB.P50, P90: o.TTFB.P90, P99: o.TTFB.P99, Max: max(s.TTFB.Max, o.TTFB.Max)}
	}
	s.Elapsed += o.Elapsed
}

// String is a few lines for --stats.
func (s Stats) String() string {
	var b strings.Builder
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	rate := 0.0
	if s.Elapsed > 0 {
		rate = mib(s.BytesRequested) / s.Elapsed.Seconds()
	}
	fmt.Fprintf(&b, "fetch: %d units, %.1f MiB requested, %.1f MiB planned, %.1f MiB fetched in %v (%.1f MiB/s)",
		s.Units, mib(s.BytesRequested), mib(s.BytesPlanned), mib(s.BytesFetched), s.Elapsed.Round(time.Millisecond), rate)
	if s.BytesGiven > 0 {
		fmt.Fprintf(&b, ", %.1f MiB given with the requests", mib(s.BytesGiven))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "fetch: %d requests, %d retries, %d duplicates for stragglers (%d won), in flight max %d (limit %d), hole %d KiB\n",
		s.Requests, s.Retries, s.Hedges, s.HedgeWins, s.InFlightMax, s.InFlightLimit, s.Hole>>10)
	fmt.Fprintf(&b, "fetch: first byte p50 %v p90 %v p99 %v max %v; consumer waited %v, memory held back %v, window held back %v\n",
		s.TTFB.P50.Round(10*time.Microsecond), s.TTFB.P90.Round(10*time.Microsecond), s.TTFB.P99.Round(10*time.Microsecond),
		s.TTFB.Max.Round(10*time.Microsecond), s.WaitConsumer.Round(time.Millisecond), s.WaitMemory.Round(time.Millisecond), s.WaitWindow.Round(time.Millisecond))
	fmt.Fprintf(&b, "fetch: memory high %.1f MiB, fresh %.1f MiB, lead %.1f MiB", mib(s.MemoryHigh), mib(s.BytesAllocated), mib(s.Lead))
	return b.String()
}

type planStats struct {
	start                                        time.Time
	units, requested, planned, fetched, requests atomic.Int64
	retries, hedges, hedgeWins                   atomic.Int64
	waitConsumer, waitMemory, allocated, hole    atomic.Int64
	waitWindow, given                            atomic.Int64
	inFlight, inFlightMax                        atomic.Int64
	memHigh                                      int64     // under Plan.mu
	lastDone                                     time.Time // under Plan.mu

	ttfbMu       sync.Mutex
	ttfb         ring[time.Duration]
	ttfbMin      time.Duration
	ttfbMax      time.Duration
	ttfbObserved int64
}

func (s *planStats) init() {
	s.start = time.Now()
	s.ttfb.init(4096)
}

func (s *planStats) inFlightAdd(d int64) {
	n := s.inFlight.Add(d)
	for {
		m := s.inFlightMax.Load()
		if n <= m || s.inFlightMax.CompareAndSwap(m, n) {
			return
		}
	}
}

func (s *planStats) addTTFB(d time.Duration) {
	s.ttfbMu.Lock()
	defer s.ttfbMu.Unlock()
	if s.ttfbObserved == 0 || d < s.ttfbMin {
		s.ttfbMin = d
	}
	s.ttfbMax = max(s.ttfbMax, d)
	s.ttfbObserved++
	s.ttfb.add(d)
}

// Stats returns the plan's figures so far.
func (p *Plan) Stats() Stats {
	s := &p.stats
	out := Stats{
		Units:          s.units.Load(),
		BytesRequested: s.requested.Load(),
		BytesPlanned:   s.planned.Load(),
		BytesFetched:   s.fetched.Load(),
		BytesGiven:     s.given.Load(),
		Requests:       s.requests.Load(),
		Retries:        s.retries.Load(),
		Hedges:         s.hedges.Load(),
		HedgeWins:      s.hedgeWins.Load(),
		WaitConsumer:   time.Duration(s.waitConsumer.Load()),
		WaitMemory:     time.Duration(s.waitMemory.Load()),
		WaitWindow:     time.Duration(s.waitWindow.Load()),
		BytesAllocated: s.allocated.Load(),
		InFlightMax:    int(s.inFlightMax.Load()),
		InFlightLimit:  p.f.link.slots.getLimit(),
		Hole:           s.hole.Load(),
		Elapsed:        time.Since(s.start),
	}
	p.mu.Lock()
	out.MemoryHigh = s.memHigh
	out.Lead = min(p.lead, p.f.opts.Memory)
	if p.srcDone && len(p.active) == 0 && !s.lastDone.IsZero() {
		out.Elapsed = s.lastDone.Sub(s.start) // finished: the time it took
	}
	p.mu.Unlock()
	s.ttfbMu.Lock()
	t := s.ttfb.sorted()
	out.TTFB = Latencies{Count: s.ttfbObserved, Min: s.ttfbMin, Max: s.ttfbMax,
		P50: quantile(t, 0.5), P90: quantile(t, 0.9), P99: quantile(t, 0.99)}
	s.ttfbMu.Unlock()
	return out
}
