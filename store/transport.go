package store

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultStallTimeout is how long a request may make no progress before the
// transport's watchdog cancels it (Options.StallTimeout zero means this).
const DefaultStallTimeout = 30 * time.Second

// minIdlePerHost is the floor for idle connections kept per host. Go's
// default of 2 makes every burst of parallel range reads pay fresh TCP (and
// TLS) handshakes, which on object storage costs more than the reads.
const minIdlePerHost = 64

// Transport is an http.RoundTripper tuned for many parallel requests to one
// object-storage host, with a watchdog that cancels requests that stall.
// It is safe for concurrent use.
type Transport struct {
	base  *http.Transport
	stall time.Duration // <= 0: no watchdog
}

// NewTransport returns the HTTP transport the S3 driver uses, sized from
// opts.Concurrency (at least 64 idle connections per host) and guarded by a
// stall watchdog of opts.StallTimeout (zero: DefaultStallTimeout; negative:
// off).
//
// The watchdog cancels a request when, for the stall timeout, it neither
// sends request bytes, nor receives its response headers, nor receives body
// bytes while a Read is waiting for them. Time the caller spends between
// Reads does not count, so a consumer that applies backpressure is not
// mistaken for a stalled connection. A stalled request fails with a
// *StallError, which is retryable.
func NewTransport(opts Options) *Transport {
	idle := max(minIdlePerHost, opts.Concurrency)
	p := new(http.Protocols)
	// HTTP/1.1 only: S3 does not speak HTTP/2, and where a server does (MinIO
	// over TLS) one multiplexed TCP connection is exactly what parallel
	// range reads must avoid: throughput scales with connections.
	p.SetHTTP1(true)
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		Protocols:           p,
		MaxIdleConns:        2 * idle,
		MaxIdleConnsPerHost: idle,
		// A cap well above the intended concurrency: enough for every
		// request the caller keeps in flight plus slack for retries and
		// stragglers, but a runaway caller cannot open thousands of sockets.
		MaxConnsPerHost:       2 * idle,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Objects are binary and read by range; transparent gzip would
		// change lengths and cost CPU.
		DisableCompression: true,
		WriteBufferSize:    64 << 10,
		ReadBufferSize:     64 << 10,
	}
	stall := opts.StallTimeout
	if stall == 0 {
		stall = DefaultStallTimeout
	}
	return &Transport{base: tr, stall: stall}
}

// CloseIdleConnections closes connections kept for reuse.
func (t *Transport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// StallError is returned when a request made no progress for After. It
// matches ErrRetryable, and the AWS SDK's retryer treats it as retryable.
type StallError struct {
	After time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("connection stalled: no data for %v", e.After)
}

// Is makes errors.Is(err, ErrRetryable) hold.
func (e *StallError) Is(target error) bool { return target == ErrRetryable }

// RetryableError tells the AWS SDK's retryer to retry.
func (e *StallError) RetryableError() bool { return true }

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.stall <= 0 {
		return t.base.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	wd := &watchdog{after: t.stall, cancel: cancel}
	// AfterFunc instead of a goroutine per request: nothing runs unless
	// the timer fires.
	wd.timer = time.AfterFunc(t.stall, wd.fire)
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &uploadBody{rc: req.Body, wd: wd}
		if get := req.GetBody; get != nil {
			// The transport rewinds through GetBody when it resends on a
			// fresh connection; that body must kick the watchdog too.
			req.GetBody = func() (io.ReadCloser, error) {
				rc, err := get()
				if err != nil {
					return nil, err
				}
				return &uploadBody{rc: rc, wd: wd}, nil
			}
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		wd.stop()
		cancel()
		return nil, wd.mapErr(err)
	}
	// Headers arrived: from here only time spent inside body Reads counts.
	wd.timer.Stop()
	resp.Body = &downloadBody{rc: resp.Body, wd: wd}
	return resp, nil
}

type watchdog struct {
	after  time.Duration
	timer  *time.Timer
	cancel context.CancelFunc
	fired  atomic.Bool
}

func (w *watchdog) fire() {
	w.fired.Store(true)
	w.cancel()
}

func (w *watchdog) kick() { w.timer.Reset(w.after) }
func (w *watchdog) stop() { w.timer.Stop() }

// mapErr replaces the cancellation the watchdog caused by a StallError,
// keeping every other error as it is.
func (w *watchdog) mapErr(err error) error {
	if err != nil && err != io.EOF && w.fired.Load() {
		return &StallError{After: w.after}
	}
	return err
}

// uploadBody kicks the watchdog while the request body is being consumed by
// the transport, i.e. while bytes leave for the network.
type uploadBody struct {
	rc io.ReadCloser
	wd *watchdog
}

func (b *uploadBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.wd.kick()
	return n, err
}

func (b *uploadBody) Close() error { return b.rc.Close() }

// downloadBody runs the watchdog only while a Read waits for the network.
type downloadBody struct {
	rc    io.ReadCloser
	wd    *watchdog
	close sync.Once
}

func (b *downloadBody) Read(p []byte) (int, error) {
	b.wd.kick()
	n, err := b.rc.Read(p)
	b.wd.stop()
	return n, b.wd.mapErr(err)
}

func (b *downloadBody) Close() error {
	err := b.rc.Close()
	b.close.Do(func() {
		b.wd.stop()
		b.wd.cancel()
	})
	return err
}
