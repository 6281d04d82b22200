// Package retry is sluice's one retry policy: which failures are worth
// another try (the store's error Kinds decide: only KindRetryable, that is
// throttling, resets, stalls and short bodies), how long to wait before it
// (exponential backoff with full jitter, capped), and how many tries.
//
// Every layer that retries (fetch's parts, scan's listings and footers,
// the benchmark's requests, cp's objects) uses it, and opens its store with
// store.Options{Attempts: 1}, so the S3 SDK's own retries do not multiply
// with these. It is not a circuit breaker and keeps no state across calls.
package retry

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/sluice-data/sluice/store"
)

// Defaults of a Policy's zero fields.
const (
	DefaultRetries = 10
	DefaultBase    = 50 * time.Millisecond
	DefaultMax     = 5 * time.Second
)

// Policy says how often and after what wait a failed call is tried again.
// The zero value is the default policy.
type Policy struct {
	// Retries is how many times a call is tried again after its first
	// failure (zero: DefaultRetries; negative: never).
	Retries int
	// Base is the ceiling of the first wait; each retry doubles it up to
	// Max (zero: DefaultBase, DefaultMax).
	Base, Max time.Duration

	// Sleep waits d, or returns ctx's error when ctx ends first (nil: a
	// timer). Tests inject one to run without wall-clock time.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter draws uniformly from [0, n) (nil: math/rand/v2). Tests inject
	// one to make the waits predictable.
	Jitter func(n int64) int64
}

func (p Policy) retries() int {
	switch {
	case p.Retries < 0:
		return 0
	case p.Retries == 0:
		return DefaultRetries
	}
	return p.Retries
}

// Retryable reports whether err is worth trying again: the store
// classified it KindRetryable.
func Retryable(err error) bool { return store.KindOf(err) == store.KindRetryable }

// Again reports whether a call that failed with err, after done retries
// already, gets another one.
func (p Policy) Again(err error, done int) bool {
	return err != nil && Retryable(err) && done < p.retries()
}

// Backoff is the wait before retry n (from 1): a uniform draw below
// Base x 2^(n-1), capped at Max, so that retries of many parallel calls
// that failed together spread out instead of arriving together again.
func (p Policy) Backoff(n int) time.Duration {
	base, ceil := p.Base, p.Max
	if base <= 0 {
		base = DefaultBase
	}
	if ceil <= 0 {
		ceil = DefaultMax
	}
	d := base << min(max(n-1, 0), 30)
	if d <= 0 || d > ceil { // <= 0: the shift overflowed
		d = ceil
	}
	jitter := p.Jitter
	if jitter == nil {
		jitter = rand.Int64N
	}
	return time.Duration(jitter(int64(d))) + 1
}

// Wait sleeps the backoff of retry n, or returns the cause of ctx's end.
func (p Policy) Wait(ctx context.Context, n int) error {
	d := p.Backoff(n)
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Do calls fn until it succeeds, fails with an error that is not
// retryable, or has been retried p's number of times, waiting the backoff
// between tries. It returns fn's last error, also when ctx ends while it
// waits: that error says what failed, the cancellation only why it stopped.
func (p Policy) Do(ctx context.Context, fn func() error) error {
	for n := 0; ; n++ {
		err := fn()
		if !p.Again(err, n) || ctx.Err() != nil {
			return err
		}
		if p.Wait(ctx, n+1) != nil {
			return err
		}
	}
}
