package s3server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"
)

// Defaults of the limits in Options. A client that sends nothing for the
// idle timeout (mid-headers, mid-body, or between requests), or reads
// nothing of a response for as long, loses its connection; so does one
// that sends a body slower than the minimum rate once its grace is spent.
// Connections past MaxConns wait in the listen queue until one closes; a
// client's past its own cap are closed at once.
const (
	DefaultHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout   = 30 * time.Second
	DefaultMaxHeaderSize = 64 << 10
	DefaultMaxConns      = 1024
	// DefaultMinBodyRate (4 KiB/s, 32 kbit/s) is far below any link a
	// client would upload over, even shared by parallel part uploads, and
	// far above what a client stalling to hold connections would send.
	DefaultMinBodyRate = 4 << 10
	DefaultBodyGrace   = 10 * time.Second
)

// perClientShare is the part of MaxConns one client may hold when
// MaxConnsPerClient is not set: 1/4, 256 of the default 1024, twice what
// an s3:// driver at its default concurrency opens to one host.
const perClientShare = 4

// sendChunk is how much of a file one sendfile call may send under one
// write deadline: a client must take it at the rate of sendChunk per idle
// timeout (8 MiB per 30 s, about 280 KB/s) not to be taken for stalled.
const sendChunk = 8 << 20

// idleConn gives every write a deadline of now plus the idle timeout, so
// a client that stops reading a response cannot hold its connection. Read
// deadlines are net/http's (headers, keep-alive) and the handler's
// (bodies, see limitedBody): setting them here would let a client
// dribbling headers a byte at a time outlive the header timeout. Closing
// it gives its place back to the listener.
type idleConn struct {
	*net.TCPConn
	idle    time.Duration
	release func()
	once    sync.Once
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.SetWriteDeadline(time.Now().Add(c.idle))
	return c.TCPConn.Write(p)
}

func (c *idleConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(c.release)
	return err
}

// ReadFrom keeps sendfile(2) for object bodies, a chunk per deadline.
func (c *idleConn) ReadFrom(r io.Reader) (int64, error) {
	var f *os.File
	var left int64 = -1
	switch src := r.(type) {
	case *os.File:
		f = src
	case *io.LimitedReader:
		if ff, ok := src.R.(*os.File); ok {
			f, left = ff, src.N
			defer func() { src.N = left }()
		}
	}
	if f == nil {
		return io.Copy(writerOnly{c}, r)
	}
	var total int64
	for left != 0 {
		n := int64(sendChunk)
		if left > 0 && left < n {
			n = left
		}
		c.SetWriteDeadline(time.Now().Add(c.idle))
		m, err := c.TCPConn.ReadFrom(&io.LimitedReader{R: f, N: n})
		total += m
		if left > 0 {
			left -= m
		}
		if err != nil {
			return total, err
		}
		if m < n { // end of file
			break
		}
	}
	return total, nil
}

// writerOnly hides ReadFrom from io.Copy, which would call it again.
type writerOnly struct{ io.Writer }

// limitListener hands out at most max connections at once (Accept waits
// for one to close), and at most perClient of them to one client: a
// connection past that is closed as soon as it is accepted, so one client
// opening connections it never uses (slowloris) cannot take every place
// from the others. A client is an IPv4 address or an IPv6 /64, the least
// a host is usually given.
type limitListener struct {
	net.Listener
	idle      time.Duration
	perClient int
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	clients map[netip.Addr]int
}

func newLimitListener(ln net.Listener, idle time.Duration, max, perClient int) *limitListener {
	return &limitListener{Listener: ln, idle: idle, perClient: perClient,
		sem: make(chan struct{}, max), done: make(chan struct{}), clients: map[netip.Addr]int{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.sem
			return nil, err
		}
		key := clientOf(c.RemoteAddr())
		l.mu.Lock()
		if l.clients[key] >= l.perClient {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.clients[key]++
		l.mu.Unlock()
		release := func() {
			l.mu.Lock()
			if l.clients[key]--; l.clients[key] <= 0 {
				delete(l.clients, key)
			}
			l.mu.Unlock()
			<-l.sem
		}
		tc, ok := c.(*net.TCPConn)
		if !ok { // not from net.Listen("tcp"): nothing to set deadlines on
			return &releaseConn{Conn: c, release: release}, nil
		}
		return &idleConn{TCPConn: tc, idle: l.idle, release: release}, nil
	}
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// clientOf is the client a remote address belongs to: its IPv4 address,
// or its IPv6 /64.
func clientOf(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.Addr()
	}
	return ip
}

type releaseConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *releaseConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// bodyLimits are the pace a request body must keep.
type bodyLimits struct {
	idle  time.Duration // longest wait for any byte
	rate  float64       // bytes per second, after grace; 0: none
	grace time.Duration
}

// limitedBody gives each read of a request body a deadline: no longer
// than the idle timeout, and no later than the body's pace allows. The
// pace is counted over the time spent waiting in Read, so that a handler
// slow to write what it read does not count against the client: after
// waiting w, at least rate x (w - grace) bytes must have come. A body of
// n bytes thus arrives within grace + n/rate of waiting, whatever its
// sender does. A body that stops short is IncompleteBody, one too slow
// RequestTimeout, as from S3.
//
// Once the body is read the deadline is lifted: net/http then reads in
// the background to notice a client that goes away, and a timeout there
// would cancel a long response.
type limitedBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	lim     bodyLimits
	waited  time.Duration
	got     int64
	done    bool
	err     error // the body failed: no more of it will come
	started bool  // a handler read from it: the request passed auth
}

// limitedBodyKey finds a request's limitedBody when a handler has wrapped
// r.Body (an aws-chunked decoder, say).
type limitedBodyKey struct{}

var errRequestTimeout = &s3Error{http.StatusBadRequest, "RequestTimeout",
	"Your socket connection to the server was not read from or written to within the timeout period. Idle connections will be closed."}

func (b *limitedBody) Read(p []byte) (int, error) {
	b.started = true
	if b.done {
		return b.ReadCloser.Read(p)
	}
	if b.err != nil {
		return 0, b.err
	}
	now := time.Now()
	b.rc.SetReadDeadline(now.Add(b.allowed()))
	n, err := b.ReadCloser.Read(p)
	b.waited += time.Since(now)
	b.got += int64(n)
	var ne net.Error
	switch {
	case err == nil:
	case err == io.EOF:
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	case errors.As(err, &ne) && ne.Timeout():
		b.err = errRequestTimeout
	case errors.Is(err, io.ErrUnexpectedEOF):
		b.err = errShortBody
	default:
		b.err = err
	}
	if b.err != nil {
		return n, b.err
	}
	return n, err
}

// allowed is how long the next read may wait.
func (b *limitedBody) allowed() time.Duration {
	d := b.lim.idle
	if b.lim.rate > 0 {
		// In seconds, so that a large body cannot overflow a Duration.
		left := b.lim.grace.Seconds() + float64(b.got)/b.lim.rate - b.waited.Seconds()
		if left < d.Seconds() {
			d = time.Duration(left * float64(time.Second))
		}
	}
	return d
}

// bodyDeadlines bounds the wait for a request body from the start: a
// request refused before its body is read still has net/http read up to
// 256 KiB of it after the handler, which must not wait forever either.
func bodyDeadlines(lim bodyLimits, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rc := http.NewResponseController(w)
			b := &limitedBody{ReadCloser: r.Body, rc: rc, lim: lim}
			rc.SetReadDeadline(time.Now().Add(b.allowed()))
			r.Body = b
			r = r.WithContext(context.WithValue(r.Context(), limitedBodyKey{}, b))
		}
		next.ServeHTTP(w, r)
	})
}

// bodyError is err, or the body's own failure (too slow, cut short) when
// reading it failed: a decoder that gives up on what it read says less.
func bodyError(r *http.Request, err error) error {
	if b, _ := r.Context().Value(limitedBodyKey{}).(*limitedBody); b != nil && b.err != nil {
		return b.err
	}
	return err
}

// dropBody makes a refusal not wait for the body the client may still be
// sending: the connection closes after the response, and what net/http
// would read of the body before that fails at once.
//
// A body an authenticated handler was already reading when it failed
// (a bad chunk mid-upload; not the body itself, too slow or cut short)
// is read on for a little, up to drainBytes
// within drainTime: a client still sending when the connection closes
// may see it reset before it reads the answer that says why.
func dropBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	b, _ := r.Context().Value(limitedBodyKey{}).(*limitedBody)
	if b != nil && b.done {
		return
	}
	rc := http.NewResponseController(w)
	if b != nil && b.started && b.err == nil {
		rc.SetReadDeadline(time.Now().Add(drainTime))
		n, err := io.CopyN(io.Discard, b.ReadCloser, drainBytes)
		if err == io.EOF && n < drainBytes {
			b.done = true
			rc.SetReadDeadline(time.Time{})
			return
		}
	}
	w.Header().Set("Connection", "close")
	rc.SetReadDeadline(time.Now())
}

// How much of a failed authenticated upload's remaining body is read so
// that the client gets the error instead of a reset.
const (
	drainBytes = 1 << 20
	drainTime  = 2 * time.Second
)
