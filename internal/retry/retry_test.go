package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// fakeClock records the waits asked for instead of sleeping them.
type fakeClock struct {
	waits []time.Duration
	// cancel, when set, is called at the wait of that index (from 0).
	cancelAt int
	cancel   context.CancelFunc
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if c.cancel != nil && len(c.waits) == c.cancelAt {
		c.cancel()
	}
	c.waits = append(c.waits, d)
	return ctx.Err()
}

// maxJitter draws the top of the range, so waits are their ceilings.
func maxJitter(n int64) int64 { return n - 1 }

var (
	throttled = &store.Error{Op: "read", URL: "s3://b/k", Kind: store.KindRetryable, Err: errors.New("503 SlowDown")}
	missing   = &store.Error{Op: "read", URL: "s3://b/k", Kind: store.KindNotFound, Err: errors.New("no such object")}
)

// failing fails with errs in turn, then succeeds.
func failing(errs ...error) (fn func() error, calls *int) {
	calls = new(int)
	return func() error {
		*calls++
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return nil
	}, calls
}

func TestBackoffDoublesToTheCap(t *testing.T) {
	p := retry.Policy{Base: 10 * time.Millisecond, Max: 100 * time.Millisecond, Jitter: maxJitter}
	want := []time.Duration{10, 20, 40, 80, 100, 100}
	for i, w := range want {
		if got := p.Backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	// Far past any shift: still the cap, never zero or negative.
	for _, n := range []int{63, 64, 1000} {
		if got := p.Backoff(n); got != 100*time.Millisecond {
			t.Errorf("backoff(%d) = %v", n, got)
		}
	}
}

func TestBackoffIsJittered(t *testing.T) {
	var asked []int64
	p := retry.Policy{Base: time.Second, Jitter: func(n int64) int64 { asked = append(asked, n); return 0 }}
	if got := p.Backoff(3); got != 1 {
		t.Errorf("lowest draw gave %v, want 1ns", got)
	}
	if len(asked) != 1 || asked[0] != int64(4*time.Second) {
		t.Errorf("drew from %v, want [0, 4s)", asked)
	}
	// The real source stays within the ceiling.
	p = retry.Policy{Base: time.Millisecond}
	for range 1000 {
		if d := p.Backoff(2); d < 1 || d > 2*time.Millisecond {
			t.Fatalf("backoff(2) = %v, outside (0, 2ms]", d)
		}
	}
}

func TestDefaults(t *testing.T) {
	p := retry.Policy{Jitter: maxJitter}
	if got := p.Backoff(1); got != retry.DefaultBase {
		t.Errorf("first wait %v, want %v", got, retry.DefaultBase)
	}
	if got := p.Backoff(100); got != retry.DefaultMax {
		t.Errorf("wait cap %v, want %v", got, retry.DefaultMax)
	}
	if !p.Again(throttled, retry.DefaultRetries-1) || p.Again(throttled, retry.DefaultRetries) {
		t.Errorf("default bound is not %d retries", retry.DefaultRetries)
	}
	if (retry.Policy{Retries: -1}).Again(throttled, 0) {
		t.Error("negative Retries still retries")
	}
}

func TestDoRetriesRetryableUntilSuccess(t *testing.T) {
	clock := &fakeClock{}
	p := retry.Policy{Retries: 5, Base: 10 * time.Millisecond, Max: time.Second, Sleep: clock.sleep, Jitter: maxJitter}
	fn, calls := failing(throttled, throttled, throttled)
	if err := p.Do(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
	if *calls != 4 {
		t.Errorf("%d calls, want 4", *calls)
	}
	want := fmt.Sprint([]time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond})
	if got := fmt.Sprint(clock.waits); got != want {
		t.Errorf("waits %s, want %s", got, want)
	}
}

func TestDoStopsAtTheBound(t *testing.T) {
	clock := &fakeClock{}
	p := retry.Policy{Retries: 3, Sleep: clock.sleep}
	fn, calls := failing(throttled, throttled, throttled, throttled, throttled)
	if err := p.Do(context.Background(), fn); err != throttled {
		t.Fatalf("err %v, want the last failure", err)
	}
	if *calls != 4 || len(clock.waits) != 3 {
		t.Errorf("%d calls and %d waits, want 4 and 3", *calls, len(clock.waits))
	}
}

func TestDoNeverRetriesWhatWillNotSucceed(t *testing.T) {
	for _, err := range []error{
		missing,
		&store.Error{Kind: store.KindPermission, Err: errors.New("denied")},
		&store.Error{Kind: store.KindPrecondition, Err: errors.New("changed")},
		context.Canceled,
		errors.New("unclassified"),
	} {
		clock := &fakeClock{}
		fn, calls := failing(err)
		if got := (retry.Policy{Sleep: clock.sleep}).Do(context.Background(), fn); got != err {
			t.Errorf("%v: returned %v", err, got)
		}
		if *calls != 1 || len(clock.waits) != 0 {
			t.Errorf("%v: %d calls, %d waits; want 1 and none", err, *calls, len(clock.waits))
		}
	}
}

// A context that ends while waiting stops the retries at once, and the
// caller hears what failed.
func TestDoStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := &fakeClock{cancelAt: 1, cancel: cancel}
	fn, calls := failing(throttled, throttled, throttled, throttled)
	if err := (retry.Policy{Sleep: clock.sleep}).Do(ctx, fn); err != throttled {
		t.Fatalf("err %v", err)
	}
	if *calls != 2 {
		t.Errorf("%d calls, want 2 (cancelled during the second wait)", *calls)
	}
}

// Wait with the real timer returns the context's cause when it ends first.
func TestWaitRealTimerHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("stopped")
	cancel(stop)
	p := retry.Policy{Base: time.Hour, Max: time.Hour}
	if err := p.Wait(ctx, 1); err != stop {
		t.Errorf("Wait on an ended context: %v, want its cause", err)
	}
}
