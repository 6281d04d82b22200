package fetch

import (
	"time"

	"github.com/sluice-data/sluice/mempool"
)

// Options configure a Fetcher. The zero value is usable; nothing here needs
// tuning for a link, since the Fetcher measures the link it reads over.
type Options struct {
	// Memory is the budget of each plan: bytes fetched and not yet
	// released by the consumer, holes included. A plan fetches ahead only
	// while within it. A single unit larger than the budget is still
	// fetched, but only when the plan holds nothing else. Default 256 MiB.
	Memory int64
	// Mem is where the bytes of units come from: a pool the caller keeps
	// for as long as the Fetcher, such as a command's mempool.NewMapped,
	// whose huge pages cost a fraction of 4 KiB pages to touch first (a
	// plan's fresh memory is the largest cost of a fetch on machines where
	// each page fault costs microseconds). Nil: the Go heap.
	Mem *mempool.Pool

	// TTFB and StreamRate (bytes per second per request) are what the link
	// is assumed to do until it has been measured; they set the first hole
	// size and straggler limits. Defaults: 15ms and 90 MiB/s, an instance
	// next to S3.
	TTFB       time.Duration
	StreamRate float64

	// InFlight is the number of requests in flight to start from and
	// MaxInFlight the most it grows to. Defaults 16 and 64.
	InFlight, MaxInFlight int

	// MaxRetries is how many times one part is retried after a retryable
	// error before the plan fails. Default 10.
	MaxRetries int
	// RetryBase is the first backoff; each retry doubles it, up to 5s,
	// with full jitter. Default 50ms.
	RetryBase time.Duration
}

const (
	defaultMemory      = 256 << 20
	defaultTTFB        = 15 * time.Millisecond
	defaultStreamRate  = 90 << 20
	defaultInFlight    = 16
	defaultMaxInFlight = 64
	defaultMaxRetries  = 10
	defaultRetryBase   = 50 * time.Millisecond
	maxBackoff         = 5 * time.Second

	minHole    = 8 << 10
	maxHole    = 8 << 20
	splitAbove = 24 << 20
	maxPart    = 16 << 20

	// A plan's first unit is split finer, so that it arrives at the
	// link's rate: spans over 2 MiB in parts of at most 1 MiB.
	headSplit = 2 << 20
	headPart  = 1 << 20
	// initWindow is the bytes a plan first keeps in flight (see
	// Plan.waitWindow): the first unit's parts and a few behind them.
	initWindow = 16 << 20
)

func (o Options) withDefaults() Options {
	if o.Memory <= 0 {
		o.Memory = defaultMemory
	}
	if o.TTFB <= 0 {
		o.TTFB = defaultTTFB
	}
	if o.StreamRate <= 0 {
		o.StreamRate = defaultStreamRate
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = defaultMaxInFlight
	}
	if o.InFlight <= 0 {
		o.InFlight = min(defaultInFlight, o.MaxInFlight)
	}
	o.InFlight = min(o.InFlight, o.MaxInFlight)
	if o.MaxRetries <= 0 {
		o.MaxRetries = defaultMaxRetries
	}
	if o.RetryBase <= 0 {
		o.RetryBase = defaultRetryBase
	}
	return o
}
