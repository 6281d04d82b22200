package s3server

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/internal/size"
)

// Settings are Options as sluice serve-s3's command line spells them: the
// limits set in full rather than left zero for their defaults, the body
// rate as a size, TLS as files. A Go caller configuring a server from text
// (a config file, its own flags) wants the same checks and the same
// loading of a certificate; Parse reads and checks them, and its errors
// name the flags (--max-conns, --tls-cert), the terms the text was
// written in.
type Settings struct {
	// Options holds the keys, region and limits. Unlike Start, which takes
	// a zero limit for its default, Settings wants each one given
	// (positive), as a command line's defaults give them.
	Options
	// BodyRate is Options.MinBodyRate as a size (4KiB); "0" is none.
	BodyRate string
	// SelfSigned is Options.SelfSignedTLS (--tls).
	SelfSigned bool
	// CertFile and KeyFile, given together, are a PEM certificate (its
	// chain included) and its private key, loaded into Options.TLS.
	CertFile, KeyFile string
}

// Bind defines sluice serve-s3's flags for the keys, region, limits and
// TLS on fs, bound to s's fields, with their defaults. They are defined
// here, beside the checks that name them, so that every command that
// takes them defines them once, as plan.BindScan does a scan's.
func (s *Settings) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&s.AccessKey, "access-key", "", "access key to require (default: generated)")
	fs.StringVar(&s.SecretKey, "secret-key", "", "secret key to require (default: generated)")
	fs.StringVar(&s.Region, "region", "us-east-1", "region requests must be signed for (a request signed for another is refused naming this one, as S3 does)")
	fs.DurationVar(&s.HeaderTimeout, "header-timeout", DefaultHeaderTimeout, "time a client may take to send a request's headers")
	fs.DurationVar(&s.IdleTimeout, "idle-timeout", DefaultIdleTimeout, "close a connection that moves no byte of a body or response, or sends no request, for this long")
	fs.IntVar(&s.MaxConns, "max-conns", DefaultMaxConns, "connections served at once (more wait)")
	fs.IntVar(&s.MaxConnsPerClient, "max-conns-per-client", 0, "connections served at once to one client, an IPv4 address or IPv6 /64 (more are closed at once; default a quarter of --max-conns)")
	fs.StringVar(&s.BodyRate, "min-body-rate", fmt.Sprintf("%dKiB", DefaultMinBodyRate>>10), "least pace of a request body per second of waiting for it, after --body-grace (slower: 400 RequestTimeout; 0: none)")
	fs.DurationVar(&s.BodyGrace, "body-grace", DefaultBodyGrace, "waiting a request body gets before --min-body-rate counts")
	fs.BoolVar(&s.SelfSigned, "tls", false, "serve HTTPS with a certificate made at start, its CA written to DIR/.s3server/ca.pem and printed as AWS_CA_BUNDLE")
	fs.StringVar(&s.CertFile, "tls-cert", "", "serve HTTPS with this certificate (PEM file, chain included; with --tls-key)")
	fs.StringVar(&s.KeyFile, "tls-key", "", "private key of --tls-cert (PEM file)")
}

// Parse reads and checks s: the first mistake, in flag terms, or the
// Options to Start with.
func (s Settings) Parse() (Options, error) {
	o := s.Options
	switch {
	case o.Region == "":
		return o, errors.New("--region must not be empty")
	case o.HeaderTimeout <= 0 || o.IdleTimeout <= 0 || o.MaxConns <= 0 || o.BodyGrace <= 0:
		return o, errors.New("--header-timeout, --idle-timeout, --body-grace and --max-conns must be positive")
	case o.MaxConnsPerClient < 0 || o.MaxConnsPerClient > o.MaxConns:
		return o, fmt.Errorf("--max-conns-per-client must be in 1..--max-conns (%d)", o.MaxConns)
	}
	rate, err := size.Parse(s.BodyRate)
	if err != nil {
		return o, fmt.Errorf("bad --min-body-rate %q: %v", s.BodyRate, err)
	}
	o.MinBodyRate = int(rate)
	if rate == 0 {
		o.MinBodyRate = -1 // none
	}
	switch {
	case (s.CertFile == "") != (s.KeyFile == ""):
		return o, errors.New("give --tls-cert and --tls-key together")
	case s.SelfSigned && s.CertFile != "":
		return o, errors.New("--tls makes a certificate; give it, or --tls-cert and --tls-key, not both")
	case s.SelfSigned:
		o.SelfSignedTLS = true
	case s.CertFile != "":
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return o, fmt.Errorf("--tls-cert/--tls-key: %v", err)
		}
		o.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	return o, nil
}
