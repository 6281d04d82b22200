package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluice-data/sluice/store"
)

// z99 is the standard normal's 99th percentile: a log-normal latency with
// median m and 99th percentile q has sigma = ln(q/m) / z99.
const z99 = 2.3263478740408408

// listPage is how many keys one List request returns, as S3 does; each
// further page is another request.
const listPage = 1000

// Wrap returns d behind a link shaped by p. A profile that shapes nothing
// returns d itself. A profile that fails p.Validate (profiles from Parse
// never do) gives a driver whose every request fails with that error:
// a link that cannot be modelled is refused, not a panic.
//
// Every request (List and each further page of 1000 keys, Stat, ReadRange,
// NewWriter, Delete) first waits a first-byte latency, then may fail with
// ErrSlowDown, drawn or, when its key prefix is over its request rate,
// for certain. Read bodies and uploads are paced, and read bodies may
// reset or stall part way.
func Wrap(d store.Driver, p Profile) store.Driver {
	if err := p.Validate(); err != nil {
		return refused{d, err}
	}
	if p.IsNone() {
		return d
	}
	l := &link{
		inner: d,
		p:     p,
		rng:   rand.New(rand.NewPCG(p.Seed, 0x5eed_11ce_5eed_11ce)),
		down:  newLimiter(p.Link),
		up:    newLimiter(p.Link),
		now:   time.Now,
	}
	if p.TTFB > 0 {
		l.mu = math.Log(float64(p.TTFB))
		l.sigma = math.Log(float64(p.p99())/float64(p.TTFB)) / z99
	}
	return l
}

// WrapOption returns a wrapper for store.Options.Wrap, or nil when p
// shapes nothing, so the caller's store is opened unwrapped.
func WrapOption(p Profile) func(store.Driver) store.Driver {
	if p.IsNone() {
		return nil
	}
	return func(d store.Driver) store.Driver { return Wrap(d, p) }
}

// WrapOptionAt is WrapOption for a store whose keys are relative to
// base (its URL("")): with Profile.ReqShare, prefixes count in the shared
// file as base+prefix, so that stores rooted apart (a dataset's
// directory, a job's) share no bucket, while processes that open the
// same root share each one.
func WrapOptionAt(p Profile, base string) func(store.Driver) store.Driver {
	if p.IsNone() {
		return nil
	}
	return func(d store.Driver) store.Driver {
		l := Wrap(d, p)
		if ln, ok := l.(*link); ok {
			ln.scope = base
		}
		return l
	}
}

// Open opens url with opts through the link model p, whatever opts.Wrap
// says. With Profile.ReqShare it first opens the store without the model
// to learn its root (its URL("")), which names its prefixes in the shared
// file (WrapOptionAt): processes that open the same root then share each
// prefix's request rate, as S3's clients do.
func Open(ctx context.Context, url string, opts store.Options, p Profile) (*store.Store, string, error) {
	opts.Wrap = WrapOption(p)
	if p.ReqShare == "" || opts.Wrap == nil {
		return store.Open(ctx, url, opts)
	}
	bare := opts
	bare.Wrap = nil
	st, _, err := store.Open(ctx, url, bare)
	if err != nil {
		return nil, "", err
	}
	base := st.URL("")
	st.Close()
	opts.Wrap = WrapOptionAt(p, base)
	return store.Open(ctx, url, opts)
}

type link struct {
	inner store.Driver
	p     Profile

	mu, sigma float64 // of ln(latency in ns)

	rngMu sync.Mutex
	rng   *rand.Rand

	down, up *rate.Limiter // shared link budgets; nil when unlimited

	now      func() time.Time // the request-rate clock; tests step it
	prefixMu sync.Mutex
	prefixes map[prefixClass]*rate.Limiter
	// shared holds the buckets instead with Profile.ReqShare, its
	// prefixes under scope.
	scope     string
	shared    *sharedBuckets
	sharedErr error
}

// draw is everything random about one request, drawn at once so the
// sequence of draws (and so a serial run) is fixed by the seed whatever
// kind of request comes next.
type draw struct {
	latency              time.Duration
	slowDown             bool
	reset, stall         bool
	resetFrac, stallFrac float64 // where in the body, uniform in [0,1)
}

func (l *link) draw() draw {
	l.rngMu.Lock()
	z := l.rng.NormFloat64()
	u := [5]float64{l.rng.Float64(), l.rng.Float64(), l.rng.Float64(), l.rng.Float64(), l.rng.Float64()}
	l.rngMu.Unlock()
	dr := draw{
		slowDown:  u[0] < l.p.SlowDown,
		reset:     u[1] < l.p.Reset,
		resetFrac: u[2],
		stall:     u[3] < l.p.Stall,
		stallFrac: u[4],
	}
	if l.p.TTFB > 0 {
		// Clamp so an extreme draw under an extreme profile cannot
		// overflow a Duration; it would be cancelled long before.
		ns := math.Min(math.Exp(l.mu+l.sigma*z), float64(maxSleep))
		dr.latency = time.Duration(ns)
	}
	return dr
}

const maxSleep = 1 << 62

// request models one round trip of a read or a write of key: the
// first-byte latency, then perhaps a 503. The draw is returned for the
// body's faults.
func (l *link) request(ctx context.Context, write bool, key string) (draw, error) {
	dr := l.draw()
	if err := sleep(ctx, nil, dr.latency); err != nil {
		return dr, err
	}
	if dr.slowDown {
		return dr, ErrSlowDown
	}
	if err := l.admit(write, key); err != nil {
		return dr, err
	}
	return dr, nil
}

func (l *link) List(ctx context.Context, prefix string, fn func(store.ObjectInfo) error) error {
	if _, err := l.request(ctx, false, prefix); err != nil {
		return err
	}
	n := 0
	return l.inner.List(ctx, prefix, func(o store.ObjectInfo) error {
		n++
		if n > listPage && n%listPage == 1 {
			if _, err := l.request(ctx, false, prefix); err != nil {
				return err
			}
		}
		return fn(o)
	})
}

func (l *link) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	if _, err := l.request(ctx, false, key); err != nil {
		return store.ObjectInfo{}, err
	}
	return l.inner.Stat(ctx, key)
}

func (l *link) ReadRange(ctx context.Context, key string, r store.Range, opts store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	dr, err := l.request(ctx, false, key)
	if err != nil {
		return nil, store.ObjectInfo{}, err
	}
	rc, info, err := l.inner.ReadRange(ctx, key, r, opts)
	if err != nil {
		return rc, info, err
	}
	b := newBody(ctx, rc, l, bodyLen(r, info.Size), dr)
	return b, info, nil
}

// bodyLen is how many bytes a range of an object of size n holds, the
// same arithmetic every driver applies (see store.Range).
func bodyLen(r store.Range, n int64) int64 {
	if r.Off < 0 {
		return min(-r.Off, n)
	}
	start := min(r.Off, n)
	if r.Len >= 0 && r.Len < n-start {
		return r.Len
	}
	return n - start
}

func (l *link) NewWriter(ctx context.Context, key string, opts store.WriteOptions) (store.DriverWriter, error) {
	outer := opts.Send
	opts.Send = func(ctx context.Context, n int64) (func() error, error) {
		done, err := l.send(ctx, key, n)
		if err != nil || outer == nil {
			return done, err
		}
		od, err := outer(ctx, n)
		if err != nil {
			_ = done()
			return nil, err
		}
		return func() error { return errors.Join(done(), od()) }, nil
	}
	w, err := l.inner.NewWriter(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	if rw, ok := w.(store.RequestWriter); ok && rw.SendsRequests() {
		// Each request the driver sends (a part of a multipart upload)
		// is a stream of its own through Send: parts in flight together
		// share the link as parallel GETs do.
		return w, nil
	}
	// A writer that sends no requests of its own (a local driver) is one
	// upload stream: its round trip is paid up front, as one write
	// against the prefix's rate, so a 503 leaves nothing behind.
	req := func() error { _, err := l.request(ctx, true, key); return err }
	if opts.Retry != nil {
		err = opts.Retry(ctx, req)
	} else {
		err = req()
	}
	if err != nil {
		_ = w.Abort()
		return nil, err
	}
	return newUpload(ctx, w, l), nil
}

// send models one request of a writer that carries n bytes: its round
// trip now (perhaps a 503, which fails it before it is sent), then its
// bytes paced on a stream of their own and the shared upload budget,
// while the real request goes on; done waits for both.
func (l *link) send(ctx context.Context, key string, n int64) (done func() error, err error) {
	if _, err := l.request(ctx, true, key); err != nil {
		return nil, err
	}
	stream := newLimiter(l.p.Stream)
	chunk := int64(chunkFor(stream, l.up))
	paced := make(chan error, 1)
	go func() {
		var err error
		for left := n; left > 0 && err == nil; left -= chunk {
			err = pace(ctx, nil, int(min(left, chunk)), stream, l.up)
		}
		paced <- err
	}()
	return func() error { return <-paced }, nil
}

func (l *link) Delete(ctx context.Context, key string) error {
	if _, err := l.request(ctx, true, key); err != nil {
		return err
	}
	return l.inner.Delete(ctx, key)
}

// Classify knows the faults this package injects; everything else is the
// inner driver's to judge.
func (l *link) Classify(err error) store.Kind {
	var f *fault
	if errors.As(err, &f) {
		return store.KindRetryable
	}
	return l.inner.Classify(err)
}

func (l *link) Close() error {
	if l.shared != nil {
		l.shared.close()
		l.shared = nil
	}
	return l.inner.Close()
}

// refused is d behind a profile that cannot be modelled: every request
// fails with why.
type refused struct {
	d   store.Driver
	why error
}

func (r refused) List(context.Context, string, func(store.ObjectInfo) error) error { return r.err() }
func (r refused) Stat(context.Context, string) (store.ObjectInfo, error) {
	return store.ObjectInfo{}, r.err()
}
func (r refused) ReadRange(context.Context, string, store.Range, store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	return nil, store.ObjectInfo{}, r.err()
}
func (r refused) NewWriter(context.Context, string, store.WriteOptions) (store.DriverWriter, error) {
	return nil, r.err()
}
func (r refused) Delete(context.Context, string) error { return r.err() }
func (r refused) Classify(err error) store.Kind        { return r.d.Classify(err) }
func (r refused) Close() error                         { return r.d.Close() }
func (r refused) err() error                           { return fmt.Errorf("%w: %v", store.ErrInvalid, r.why) }
