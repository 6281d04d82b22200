package s3server

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// Defaults of the limits in Options. A client that sends nothing for the
// idle timeout (mid-headers, mid-body, or between requests), or reads
// nothing of a response for as long, loses its connection; so do the
// connections past MaxConns wait in the listen queue until one closes.
const (
	DefaultHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout   = 30 * time.Second
	DefaultMaxHeaderSize = 64 << 10
	DefaultMaxConns      = 1024
)

// sendChunk is how much of a file one sendfile call may send under one
// write deadline: a client must take it at the rate of sendChunk per idle
// timeout (8 MiB per 30 s, about 280 KB/s) not to be taken for stalled.
const sendChunk = 8 << 20

// idleConn gives every write a deadline of now plus the idle timeout, so
// a client that stops reading a response cannot hold its connection. Read
// deadlines are net/http's (headers, keep-alive) and the handler's
// (bodies, see idleBody): setting them here would let a client dribbling
// headers a byte at a time outlive the header timeout.
type idleConn struct {
	*net.TCPConn
	idle time.Duration
}

func (c *idleConn) Write(p []byte) (int, error) {
	c.SetWriteDeadline(time.Now().Add(c.idle))
	return c.TCPConn.Write(p)
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

type idleListener struct {
	net.Listener
	idle time.Duration
}

func (l idleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return &idleConn{TCPConn: tc, idle: l.idle}, nil
	}
	return c, nil
}

// idleBody gives each read of a request body a deadline of now plus the
// idle timeout, so that a client that stops sending mid-body loses the
// connection, however large the body. Once the body is read the deadline
// is lifted: net/http then reads in the background to notice a client
// that goes away, and a timeout there would cancel a long response.
type idleBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	idle    time.Duration
	done    bool
	started bool // a handler read from it: the request passed auth
}

// idleBodyKey finds a request's idleBody when a handler has wrapped
// r.Body (an aws-chunked decoder, say).
type idleBodyKey struct{}

func (b *idleBody) Read(p []byte) (int, error) {
	b.started = true
	if b.done {
		return b.ReadCloser.Read(p)
	}
	b.rc.SetReadDeadline(time.Now().Add(b.idle))
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// bodyDeadlines bounds the wait for a request body from the start: a
// request refused before its body is read still has net/http read up to
// 256 KiB of it after the handler, which must not wait forever either.
func bodyDeadlines(idle time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			rc := http.NewResponseController(w)
			rc.SetReadDeadline(time.Now().Add(idle))
			b := &idleBody{ReadCloser: r.Body, rc: rc, idle: idle}
			r.Body = b
			r = r.WithContext(context.WithValue(r.Context(), idleBodyKey{}, b))
		}
		next.ServeHTTP(w, r)
	})
}

// dropBody makes a refusal not wait for the body the client may still be
// sending: the connection closes after the response, and what net/http
// would read of the body before that fails at once.
//
// A body an authenticated handler was already reading when it failed
// (a bad chunk mid-upload) is read on for a little, up to drainBytes
// within drainTime: a client still sending when the connection closes
// may see it reset before it reads the answer that says why.
func dropBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	b, _ := r.Context().Value(idleBodyKey{}).(*idleBody)
	if b != nil && b.done {
		return
	}
	rc := http.NewResponseController(w)
	if b != nil && b.started {
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
