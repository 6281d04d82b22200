package s3server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/s3server"
)

func TestSettingsParse(t *testing.T) {
	cert, key := writeCertPair(t)
	good := s3server.Settings{
		Options: s3server.Options{
			Region: "us-east-1", HeaderTimeout: time.Second, IdleTimeout: time.Second,
			MaxConns: 8, BodyGrace: time.Second,
		},
		BodyRate: "4KiB",
	}
	with := func(edit func(*s3server.Settings)) s3server.Settings {
		s := good
		edit(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		s    s3server.Settings
		want string
	}{
		{"no region", with(func(s *s3server.Settings) { s.Region = "" }), "--region must not be empty"},
		{"no header timeout", with(func(s *s3server.Settings) { s.HeaderTimeout = 0 }), "--header-timeout, --idle-timeout, --body-grace and --max-conns must be positive"},
		{"negative idle timeout", with(func(s *s3server.Settings) { s.IdleTimeout = -time.Second }), "--header-timeout, --idle-timeout, --body-grace and --max-conns must be positive"},
		{"no body grace", with(func(s *s3server.Settings) { s.BodyGrace = 0 }), "--header-timeout, --idle-timeout, --body-grace and --max-conns must be positive"},
		{"no conns", with(func(s *s3server.Settings) { s.MaxConns = 0 }), "--header-timeout, --idle-timeout, --body-grace and --max-conns must be positive"},
		{"negative per client", with(func(s *s3server.Settings) { s.MaxConnsPerClient = -1 }), "--max-conns-per-client must be in 1..--max-conns (8)"},
		{"per client over max", with(func(s *s3server.Settings) { s.MaxConnsPerClient = 9 }), "--max-conns-per-client must be in 1..--max-conns (8)"},
		{"bad body rate", with(func(s *s3server.Settings) { s.BodyRate = "xx" }), `bad --min-body-rate "xx": bad size "xx": want a number with an optional unit, such as 16MiB (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)`},
		{"cert alone", with(func(s *s3server.Settings) { s.CertFile = cert }), "give --tls-cert and --tls-key together"},
		{"key alone", with(func(s *s3server.Settings) { s.KeyFile = key }), "give --tls-cert and --tls-key together"},
		{"self-signed and files", with(func(s *s3server.Settings) { s.SelfSigned, s.CertFile, s.KeyFile = true, cert, key }), "--tls makes a certificate; give it, or --tls-cert and --tls-key, not both"},
		{"missing cert", with(func(s *s3server.Settings) { s.CertFile, s.KeyFile = "/nonexistent/c.pem", key }), "--tls-cert/--tls-key: open /nonexistent/c.pem: no such file or directory"},
		{"key for no cert", with(func(s *s3server.Settings) { s.CertFile, s.KeyFile = cert, cert }), "--tls-cert/--tls-key: tls: found a certificate rather than a key in the PEM for the private key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.s.Parse()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Parse: %v, want %q", err, tc.want)
			}
		})
	}

	o, err := good.Parse()
	if err != nil || o.MinBodyRate != 4096 || o.TLS != nil || o.SelfSignedTLS {
		t.Fatalf("Parse of good settings: %+v, %v", o, err)
	}
	if o, err := with(func(s *s3server.Settings) { s.BodyRate = "0" }).Parse(); err != nil || o.MinBodyRate != -1 {
		t.Fatalf("--min-body-rate 0: MinBodyRate %d, %v; want -1 (none)", o.MinBodyRate, err)
	}
	if o, err := with(func(s *s3server.Settings) { s.SelfSigned = true }).Parse(); err != nil || !o.SelfSignedTLS {
		t.Fatalf("--tls: SelfSignedTLS %v, %v", o.SelfSignedTLS, err)
	}
	o, err = with(func(s *s3server.Settings) { s.CertFile, s.KeyFile = cert, key }).Parse()
	if err != nil || o.TLS == nil || len(o.TLS.Certificates) != 1 {
		t.Fatalf("--tls-cert and --tls-key: %+v, %v", o.TLS, err)
	}
}

// writeCertPair writes a self-signed certificate and its key as PEM files.
func writeCertPair(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// Bind's defaults are the settings of no flags, which Parse takes: the
// limits Start would default to.
func TestSettingsBind(t *testing.T) {
	var s s3server.Settings
	fs := pflag.NewFlagSet("serve-s3", pflag.ContinueOnError)
	s.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	o, err := s.Parse()
	if err != nil {
		t.Fatalf("Parse() of the defaults: %v", err)
	}
	if o.Region != "us-east-1" || o.HeaderTimeout != s3server.DefaultHeaderTimeout || o.IdleTimeout != s3server.DefaultIdleTimeout ||
		o.MaxConns != s3server.DefaultMaxConns || o.MaxConnsPerClient != 0 || o.MinBodyRate != s3server.DefaultMinBodyRate ||
		o.BodyGrace != s3server.DefaultBodyGrace || o.SelfSignedTLS || o.TLS != nil {
		t.Errorf("Parse() of the defaults = %+v", o)
	}
}
