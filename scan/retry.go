package scan

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/sluice-data/sluice/store"
)

// The listing and the footer reads are the requests a scan makes outside
// package fetch, which retries and races its own. They need the same
// care: without it one 503 SlowDown fails the whole scan, and one footer
// read stalled mid-body holds Open up for as long as the stall lasts.
const (
	maxRetries = 10
	retryBase  = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
	// hedgeAfter is how long a footer read runs before a second one races
	// it: several first-byte p99s of object storage (80 ms), and far
	// longer than a footer of a few KiB takes once its first byte is in.
	hedgeAfter = 500 * time.Millisecond
)

// withRetries calls fn until it succeeds, fails with an error that is not
// retryable (store.IsRetryable), or has been retried maxRetries times,
// waiting between tries with exponential backoff and full jitter.
func withRetries(ctx context.Context, fn func() error) error {
	for n := 0; ; n++ {
		err := fn()
		if err == nil || !store.IsRetryable(err) || n >= maxRetries || ctx.Err() != nil {
			return err
		}
		ceil := min(retryBase<<n, maxBackoff)
		t := time.NewTimer(time.Duration(rand.Int64N(int64(ceil)) + 1))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}

// readRange reads a range of key in full, retrying retryable errors, and
// racing an attempt that has not finished after hedgeAfter with a second
// one: the first to succeed wins and the other is cancelled.
func (r *footerReader) readRange(ctx context.Context, key string, rg store.Range, opts store.ReadOptions) (b []byte, info store.ObjectInfo, err error) {
	err = withRetries(ctx, func() error {
		b, info, err = r.hedged(ctx, key, rg, opts)
		return err
	})
	return b, info, err
}

func (r *footerReader) hedged(ctx context.Context, key string, rg store.Range, opts store.ReadOptions) ([]byte, store.ObjectInfo, error) {
	type result struct {
		b    []byte
		info store.ObjectInfo
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan result, 2) // buffered: the loser never blocks
	try := func() {
		b, info, err := r.readOnce(ctx, key, rg, opts)
		out <- result{b, info, err}
	}
	go try()
	t := time.NewTimer(hedgeAfter)
	defer t.Stop()
	running := 1
	var last result
	for {
		select {
		case <-t.C:
			running++
			go try()
			continue
		case res := <-out:
			running--
			if res.err == nil {
				return res.b, res.info, nil
			}
			last = res
		}
		if running == 0 {
			return nil, last.info, last.err
		}
	}
}
