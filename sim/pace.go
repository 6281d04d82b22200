package sim

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluice-data/sluice/store"
)

const (
	// maxChunk is the most a body moves between two pacing decisions.
	maxChunk = 64 << 10
	// burstWindow sizes a limiter's bucket: time lost to a late timer
	// wake-up (common on a busy machine, and longer than a chunk's share at
	// GiB/s rates) is made up from the bucket instead of lost, so long-run
	// rates stay accurate. It is also the most an idle link can send at
	// once beyond its rate.
	burstWindow = 20 * time.Millisecond
	maxBurst    = 1 << 30
)

var errClosed = errors.New("sim: read on a closed body")

// newLimiter paces bps bytes a second, or returns nil for unlimited. It
// starts holding one chunk, not a full bucket, so a body's first bytes
// arrive at once and the rest at the rate, never a window's worth early.
func newLimiter(bps float64) *rate.Limiter {
	if bps == 0 {
		return nil
	}
	burst := int(min(max(bps*burstWindow.Seconds(), 1), maxBurst))
	lim := rate.NewLimiter(rate.Limit(bps), burst)
	lim.ReserveN(time.Now(), burst-min(burst, maxChunk))
	return lim
}

// chunkFor is the largest step that every limiter can grant at once.
func chunkFor(lims ...*rate.Limiter) int {
	c := maxChunk
	for _, lim := range lims {
		if lim != nil {
			c = min(c, lim.Burst())
		}
	}
	return c
}

// pace waits until every limiter grants n bytes. It reserves instead of
// calling WaitN because WaitN fails at once, with an error that is not the
// context's, when a deadline is nearer than the wait; a watchdog must see
// context.DeadlineExceeded when the deadline passes, like any other read.
func pace(ctx context.Context, closed <-chan struct{}, n int, stream, link *rate.Limiter) error {
	now := time.Now()
	var rs [2]*rate.Reservation
	var delay time.Duration
	for i, lim := range [2]*rate.Limiter{stream, link} {
		if lim == nil {
			continue
		}
		rs[i] = lim.ReserveN(now, n)
		delay = max(delay, rs[i].DelayFrom(now))
	}
	if err := sleep(ctx, closed, delay); err != nil {
		for _, r := range rs {
			if r != nil {
				r.Cancel() // give the unused share back to the other streams
			}
		}
		return err
	}
	return nil
}

// sleep waits d, returning early with ctx's error or errClosed.
func sleep(ctx context.Context, closed <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return errClosed
	}
}

// body is a read body behind the link. It hands on the inner driver's
// bytes unchanged, paced, possibly stalled, possibly cut short by ErrReset;
// after any error it returns that error forever, so what was delivered is
// always a prefix of the inner body.
type body struct {
	ctx    context.Context
	rc     io.ReadCloser
	stream *rate.Limiter
	down   *rate.Limiter
	chunk  int

	n        int64 // bytes delivered
	resetAt  int64 // deliver this many bytes, then ErrReset; -1 never
	stallAt  int64 // stall before delivering byte stallAt; -1 never
	stallFor time.Duration
	err      error

	closed    chan struct{}
	closeOnce sync.Once
}

func newBody(ctx context.Context, rc io.ReadCloser, l *link, size int64, dr draw) *body {
	b := &body{
		ctx:      ctx,
		rc:       rc,
		stream:   newLimiter(l.p.Stream),
		down:     l.down,
		resetAt:  -1,
		stallAt:  -1,
		stallFor: l.p.StallFor,
		closed:   make(chan struct{}),
	}
	b.chunk = chunkFor(b.stream, b.down)
	if dr.reset {
		b.resetAt = point(dr.resetFrac, size)
	}
	if dr.stall {
		b.stallAt = point(dr.stallFrac, size)
	}
	return b
}

// point is a uniform offset in [0, size), or 0 for an empty body.
func point(frac float64, size int64) int64 {
	p := int64(frac * float64(size))
	return max(min(p, size-1), 0)
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := b.ctx.Err(); err != nil {
		return b.fail(err)
	}
	if b.stallAt >= 0 && b.n >= b.stallAt {
		b.stallAt = -1
		if err := sleep(b.ctx, b.closed, b.stallFor); err != nil {
			return b.fail(err)
		}
	}
	if b.resetAt >= 0 && b.n >= b.resetAt {
		return b.fail(ErrReset)
	}
	limit := int64(b.chunk)
	if b.resetAt >= 0 {
		limit = min(limit, b.resetAt-b.n)
	}
	if b.stallAt > b.n {
		limit = min(limit, b.stallAt-b.n)
	}
	p = p[:min(int64(len(p)), limit)]
	n, err := b.rc.Read(p)
	if n > 0 {
		if perr := pace(b.ctx, b.closed, n, b.stream, b.down); perr != nil {
			// The n bytes were read from the inner body but are dropped
			// with the error, which sticks: nothing after them is ever
			// delivered, so the caller never sees a gap.
			return b.fail(perr)
		}
		b.n += int64(n)
	}
	return n, err
}

func (b *body) fail(err error) (int, error) {
	b.err = err
	return 0, err
}

// Close unblocks a Read waiting in a stall or on the pacer, as closing an
// HTTP body does.
func (b *body) Close() error {
	b.closeOnce.Do(func() { close(b.closed) })
	return b.rc.Close()
}

// upload is a writer behind the link: the same pacing on the upload budget.
type upload struct {
	ctx    context.Context
	w      store.DriverWriter
	stream *rate.Limiter
	up     *rate.Limiter
	chunk  int
}

func newUpload(ctx context.Context, w store.DriverWriter, l *link) *upload {
	u := &upload{ctx: ctx, w: w, stream: newLimiter(l.p.Stream), up: l.up}
	u.chunk = chunkFor(u.stream, u.up)
	return u
}

func (u *upload) Write(p []byte) (int, error) {
	var done int
	for len(p) > 0 {
		k := min(len(p), u.chunk)
		if err := pace(u.ctx, nil, k, u.stream, u.up); err != nil {
			return done, err
		}
		n, err := u.w.Write(p[:k])
		done += n
		if err != nil {
			return done, err
		}
		p = p[k:]
	}
	return done, nil
}

func (u *upload) Close() error { return u.w.Close() }

func (u *upload) Abort() error { return u.w.Abort() }
