package s3server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure Start. The zero value is usable.
type Options struct {
	// AccessKey and SecretKey are the only credentials the server
	// accepts. Empty: a random pair is generated (see Server).
	AccessKey, SecretKey string

	// Region is the region the server is in: requests must be signed for
	// it (one signed for another is refused naming this one, as S3 does,
	// so clients can discover it). Empty: us-east-1.
	Region string

	// HeaderTimeout bounds the time a client may take to send a request's
	// headers. Zero: DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// IdleTimeout bounds the time a connection may make no progress: no
	// byte of a request body arrives, no byte of a response is taken, or
	// no next request comes. Zero: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxHeaderSize bounds the size of a request's headers. Zero:
	// DefaultMaxHeaderSize.
	MaxHeaderSize int
	// MaxConns bounds the connections open at once; more wait to be
	// accepted until one closes. Zero: DefaultMaxConns.
	MaxConns int
	// MaxConnsPerClient bounds the connections one client (an IPv4
	// address, an IPv6 /64) may have open at once, so that one client
	// cannot take every place MaxConns gives: its connections past that
	// are closed as soon as they are accepted. Zero: a quarter of
	// MaxConns (at least 1).
	MaxConnsPerClient int
	// MinBodyRate is the least pace of a request body, in bytes per
	// second of waiting for it, once BodyGrace of waiting is spent: a
	// body of n bytes arrives within BodyGrace + n/MinBodyRate of waiting
	// or is answered 400 RequestTimeout, as one with a pause longer than
	// IdleTimeout is; the time the server takes to store what it read
	// does not count. Zero: DefaultMinBodyRate; negative: no minimum (the
	// idle timeout still holds).
	MinBodyRate int
	// BodyGrace is the waiting a body gets before its pace counts.
	// Zero: DefaultBodyGrace.
	BodyGrace time.Duration

	// TLS, when set, makes the server speak HTTPS (HTTP/1.1, as S3) with
	// this configuration, which must hold a certificate. The Endpoint is
	// then https://.
	TLS *tls.Config
	// SelfSignedTLS makes the server speak HTTPS with a certificate that
	// Start makes for the listen address, 127.0.0.1, ::1 and localhost
	// (and the host's names and addresses when it listens on every
	// interface), signed by a CA made for it alone (its key is dropped
	// once the certificate is signed). The CA is written to
	// Server.CAFile for clients to trust (AWS_CA_BUNDLE). Not with TLS.
	SelfSignedTLS bool

	// Metrics, when set, gets the server's Prometheus collectors
	// (requests by operation and status code, their latency, bytes
	// received and sent, requests in flight; see metrics.go). Start fails
	// if they cannot be registered, as on a registry another Server uses.
	Metrics prometheus.Registerer
}

func (o *Options) defaults() {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxHeaderSize <= 0 {
		o.MaxHeaderSize = DefaultMaxHeaderSize
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxConnsPerClient <= 0 {
		o.MaxConnsPerClient = max(1, o.MaxConns/perClientShare)
	}
	if o.MinBodyRate == 0 {
		o.MinBodyRate = DefaultMinBodyRate
	}
	if o.BodyGrace <= 0 {
		o.BodyGrace = DefaultBodyGrace
	}
}

// Server is a running S3 endpoint over a directory.
type Server struct {
	// Endpoint is the URL clients use, e.g. http://127.0.0.1:40123.
	Endpoint string
	// CAFile is the PEM file of the CA that signed the server's
	// certificate, for clients to trust, when Start made it
	// (Options.SelfSignedTLS): DIR/.s3server/ca.pem, made anew at every
	// start. Empty otherwise.
	CAFile string
	// AccessKey and SecretKey are the credentials requests must be
	// signed with (AWS Signature Version 4 for Region, or Version 2).
	AccessKey, SecretKey string
	// Region is the region requests must be signed for.
	Region string
	// Dir is the absolute path of the served directory.
	Dir string

	backend *dirBackend
	srv     *http.Server
	served  chan struct{}
	stop    func() bool

	closeOnce sync.Once
	closeErr  error
}

// Start serves dir over S3 on addr ("127.0.0.1:0" picks a free port; empty
// means that) until Close is called or ctx is done. Each top-level
// subdirectory of dir is a bucket; dir is created if missing. Start prints
// nothing: the endpoint and credentials are in the returned Server.
func Start(ctx context.Context, dir, addr string, opts Options) (*Server, error) {
	if (opts.AccessKey == "") != (opts.SecretKey == "") {
		return nil, errors.New("s3server: set both the access key and the secret key, or neither")
	}
	if opts.AccessKey == "" {
		opts.AccessKey = "SLUICE" + rand.Text()[:14]
		opts.SecretKey = rand.Text() + rand.Text()
	}
	if opts.TLS != nil && opts.SelfSignedTLS {
		return nil, errors.New("s3server: set TLS or SelfSignedTLS, not both")
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	opts.defaults()
	b, err := newDirBackend(dir)
	if err != nil {
		return nil, fmt.Errorf("s3server: %w", err)
	}
	b.owner = opts.AccessKey
	b.region = opts.Region
	v := &verifier{accessKey: opts.AccessKey, secretKey: opts.SecretKey, region: opts.Region, now: time.Now}
	// The order matters: deadlines bound every body read; a request is
	// authenticated, then matched to an operation, before any of its body
	// is read.
	lim := bodyLimits{idle: opts.IdleTimeout, grace: opts.BodyGrace}
	if opts.MinBodyRate > 0 {
		lim.rate = float64(opts.MinBodyRate)
	}
	handler := bodyDeadlines(lim, v.wrap(onlyImplemented(b.handler())))
	if opts.Metrics != nil {
		m, err := newMetrics(opts.Metrics)
		if err != nil {
			b.close()
			return nil, fmt.Errorf("s3server: metrics: %w", err)
		}
		handler = m.instrument(handler)
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("s3server: %w", err)
	}
	scheme, tlsConf, caFile := "http", opts.TLS, ""
	if tlsConf != nil || opts.SelfSignedTLS {
		scheme = "https"
	}
	if opts.SelfSignedTLS {
		var caPEM []byte
		tlsConf, caPEM, err = selfSigned(ln.Addr().(*net.TCPAddr))
		if err == nil {
			caFile = filepath.Join(b.root, stateDir, "ca.pem")
			err = os.WriteFile(caFile, caPEM, 0o644)
		}
		if err != nil {
			ln.Close()
			b.close()
			return nil, fmt.Errorf("s3server: TLS: %w", err)
		}
	}
	s := &Server{
		Endpoint:  scheme + "://" + clientAddr(ln.Addr().(*net.TCPAddr)),
		CAFile:    caFile,
		AccessKey: opts.AccessKey,
		SecretKey: opts.SecretKey,
		Region:    opts.Region,
		Dir:       b.root,
		backend:   b,
		served:    make(chan struct{}),
		srv: &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: opts.HeaderTimeout,
			IdleTimeout:       opts.IdleTimeout,
			MaxHeaderBytes:    opts.MaxHeaderSize,
			ErrorLog:          log.New(io.Discard, "", 0),
		},
	}
	var l net.Listener = newLimitListener(ln, opts.IdleTimeout, opts.MaxConns, opts.MaxConnsPerClient)
	if tlsConf != nil {
		// HTTP/1.1 only, as S3: the limits above are per connection, and
		// one connection of multiplexed streams is not what clients reading
		// in parallel want.
		tlsConf = tlsConf.Clone()
		tlsConf.NextProtos = []string{"http/1.1"}
		if tlsConf.MinVersion == 0 {
			tlsConf.MinVersion = tls.VersionTLS12
		}
		s.srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
		l = tls.NewListener(l, tlsConf)
	}
	go func() {
		defer close(s.served)
		s.srv.Serve(l)
	}()
	s.stop = context.AfterFunc(ctx, func() { s.Close() })
	return s, nil
}

// clientAddr is the address a local client dials: a server bound to every
// interface is reached on loopback.
func clientAddr(a *net.TCPAddr) string {
	ip := a.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(a.Port))
}

// Close stops the server: new connections are refused at once, requests
// in progress get a few seconds to finish.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			s.closeErr = s.srv.Close()
		}
		<-s.served
		if err := s.backend.close(); s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

// CreateBucket makes a bucket (a top-level directory) if it does not exist.
func (s *Server) CreateBucket(name string) error {
	if err := gofakes3.ValidateBucketName(name); err != nil {
		return fmt.Errorf("s3server: bucket %q: %v", name, err)
	}
	if err := os.Mkdir(filepath.Join(s.Dir, name), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("s3server: %w", err)
	}
	return nil
}

// Env is the environment that points an AWS SDK or CLI at this server.
func (s *Server) Env() []string {
	env := []string{
		"AWS_ENDPOINT_URL=" + s.Endpoint,
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_REGION=" + s.Region,
	}
	if s.CAFile != "" {
		env = append(env, "AWS_CA_BUNDLE="+s.CAFile)
	}
	return env
}
