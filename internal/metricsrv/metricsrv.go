// Package metricsrv serves a process's Prometheus metrics on a listener of
// their own (sluice serve-flight, serve-s3 and run --workers with
// --metrics-addr): a registry per process with the Go and process
// collectors, /metrics in the text or protobuf exposition format, an
// optional bearer token, and a refusal of addresses other than loopback
// unless the caller allows them.
package metricsrv

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluice-data/sluice/internal/netaddr"
)

// NewRegistry is a registry holding the Go runtime's and the process's
// collectors, for a server's own to join.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// ErrAddr is matched by Start's refusals of its address, all mistakes of
// whoever chose it: one it cannot read, one another listener holds, and
// ErrNotLoopback. Their words name the flag that gives the address in
// sluice, --metrics-addr.
var ErrAddr = errors.New("bad metrics address")

// ErrNotLoopback is Start's refusal of an address reachable from other
// machines when Options.Remote is false.
var ErrNotLoopback = errors.New("not a loopback address")

// addrError is an ErrAddr; notLoopback, an ErrNotLoopback too.
type addrError struct {
	msg         string
	err         error
	notLoopback bool
}

func (e *addrError) Error() string { return e.msg }
func (e *addrError) Unwrap() error { return e.err }
func (e *addrError) Is(target error) bool {
	return target == ErrAddr || e.notLoopback && target == ErrNotLoopback
}

// Options configure Start.
type Options struct {
	// Remote allows an address other than loopback.
	Remote bool
	// Token, when set, is the bearer token every scrape must carry
	// ("Authorization: Bearer TOKEN"; Prometheus's authorization
	// setting of a scrape config sends it).
	Token string
}

// Server serves metrics until Close.
type Server struct {
	// URL is where the metrics are, e.g. http://127.0.0.1:9464/metrics.
	URL string
	// Loopback says the address is loopback only; otherwise the metrics
	// are reachable from other machines, which its caller may warn of.
	Loopback bool
	srv      *http.Server
	served   chan struct{}
}

// Start serves g's metrics at /metrics on addr (port 0 picks a free one).
func Start(addr string, g prometheus.Gatherer, opts Options) (*Server, error) {
	loopback, err := netaddr.IsLoopback(addr)
	if err != nil {
		return nil, &addrError{msg: fmt.Sprintf("bad --metrics-addr %q: %v", addr, err), err: err}
	}
	if !loopback && !opts.Remote {
		return nil, &addrError{msg: fmt.Sprintf("--metrics-addr %s is reachable from other machines", addr), notLoopback: true}
	}
	var h http.Handler = promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	if opts.Token != "" {
		h = bearer(opts.Token, h)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &addrError{msg: fmt.Sprintf("--metrics-addr %s is taken: give another port, or 127.0.0.1:0 for a free one", addr), err: err}
	}
	if err != nil {
		return nil, err
	}
	// The host as given (0.0.0.0 rather than the [::] it binds), the
	// port as bound.
	host, _, _ := net.SplitHostPort(addr)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if host == "" {
		host = "0.0.0.0"
	}
	s := &Server{
		URL:      "http://" + net.JoinHostPort(host, port) + "/metrics",
		Loopback: loopback,
		served:   make(chan struct{}),
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
			ErrorLog:          log.New(io.Discard, "", 0),
		},
	}
	go func() {
		defer close(s.served)
		s.srv.Serve(ln)
	}()
	return s, nil
}

func bearer(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "a bearer token is required (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Close stops serving: a scrape in progress gets a second to finish.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.served
	return err
}
