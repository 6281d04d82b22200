package scan

import (
	"context"
	"time"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// The listing and the footer reads are the requests a scan makes outside
// package fetch, which retries and races its own. They need the same
// care: without it one 503 SlowDown fails the whole scan, and one footer
// read stalled mid-body holds Open up for as long as the stall lasts.
// policy is sluice's one retry policy, as fetch uses it.
var policy = retry.Policy{Retries: maxRetries}

const (
	maxRetries = retry.DefaultRetries
	// hedgeAfter is how long a footer read runs before a second one races
	// it: several first-byte p99s of object storage (80 ms), and far
	// longer than a footer of a few KiB takes once its first byte is in.
	hedgeAfter = 500 * time.Millisecond
)

// maxFooterAttempts bounds the requests one footer read makes: its
// retries and the duplicates raced against slow ones.
const maxFooterAttempts = 2 * maxRetries

// readRange reads a range of key in full. An attempt still running after
// hedgeAfter is raced by a second one, and an attempt that fails with a
// retryable error is replaced after a backoff, at most two running at
// once; the first to succeed wins and the others are cancelled. A failed
// duplicate must not leave the read waiting on a stalled original, so a
// failure is replaced even while another attempt runs.
func (r *footerReader) readRange(ctx context.Context, key string, rg store.Range, opts store.ReadOptions) ([]byte, store.ObjectInfo, error) {
	type result struct {
		b    []byte
		info store.ObjectInfo
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan result, maxFooterAttempts) // the losers never block
	running, attempts, failures := 0, 0, 0
	start := func() {
		if running >= 2 || attempts >= maxFooterAttempts {
			return
		}
		running++
		attempts++
		go func() {
			b, info, err := r.readOnce(ctx, key, rg, opts)
			out <- result{b, info, err}
		}()
	}
	start()
	hedge := time.NewTimer(hedgeAfter)
	defer hedge.Stop()
	var again <-chan time.Time
	for {
		select {
		case <-hedge.C:
			start()
			hedge.Reset(hedgeAfter)
		case <-again:
			again = nil
			start()
			hedge.Reset(hedgeAfter)
		case res := <-out:
			running--
			if res.err == nil {
				return res.b, res.info, nil
			}
			if policy.Again(res.err, failures) && attempts < maxFooterAttempts {
				failures++
				if again == nil {
					again = time.After(policy.Backoff(failures))
				}
				continue
			}
			if running == 0 && again == nil {
				return nil, res.info, res.err
			}
		case <-ctx.Done():
			return nil, store.ObjectInfo{}, context.Cause(ctx)
		}
	}
}
