package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// withoutCA is env without AWS_CA_BUNDLE, and the caller's emptied.
func withoutCA(env []string) []string {
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "AWS_CA_BUNDLE=") })
	return append(env, "AWS_CA_BUNDLE=")
}

// `serve-s3 --tls` makes a certificate and prints its CA as AWS_CA_BUNDLE:
// `sluice ls` with those exports lists the bucket over HTTPS, and without
// the CA fails in one line that says to set AWS_CA_BUNDLE.
func TestServeS3TLS(t *testing.T) {
	dir := t.TempDir()
	env := startServer(t, dir, "--tls")
	ca := "AWS_CA_BUNDLE=" + filepath.Join(dir, ".s3server", "ca.pem")
	if !slices.Contains(env, ca) {
		t.Fatalf("serve-s3 --tls exports %q, want %s", env, ca)
	}
	var endpoint string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "AWS_ENDPOINT_URL="); ok {
			endpoint = v
		}
	}
	if !strings.HasPrefix(endpoint, "https://127.0.0.1:") {
		t.Errorf("serve-s3 --tls endpoint %q, want https://127.0.0.1:PORT", endpoint)
	}
	if err := os.WriteFile(filepath.Join(dir, "bkt", "hello.txt"), []byte("hello over TLS\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := sluice(t, env, "ls", "s3://bkt/")
	if r.code != 0 || !strings.Contains(r.stdout, "hello.txt") {
		t.Errorf("ls over TLS with the CA: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	assertCleanFailure(t, sluice(t, withoutCA(env), "ls", "s3://bkt/"), exitError, "not trusted")
	if r := sluice(t, withoutCA(env), "ls", "s3://bkt/"); !strings.Contains(r.stderr, "set AWS_CA_BUNDLE") {
		t.Errorf("ls over TLS without the CA: stderr %q does not say to set AWS_CA_BUNDLE", r.stderr)
	}
}

// `serve-s3 --tls-cert --tls-key` serves HTTPS with a certificate of the
// user's, which `sluice ls` trusts through its CA in AWS_CA_BUNDLE.
func TestServeS3OwnCertificate(t *testing.T) {
	files := t.TempDir()
	caFile, certFile, keyFile := writeCertificate(t, files)
	dir := t.TempDir()
	env := startServer(t, dir, "--tls-cert", certFile, "--tls-key", keyFile)
	if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "AWS_CA_BUNDLE=") }) {
		t.Errorf("serve-s3 with a certificate of the user's exports %q: no CA of its own to name", env)
	}
	if err := os.WriteFile(filepath.Join(dir, "bkt", "mine.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := sluice(t, append(withoutCA(env), "AWS_CA_BUNDLE="+caFile), "ls", "s3://bkt/")
	if r.code != 0 || !strings.Contains(r.stdout, "mine.txt") {
		t.Errorf("ls over TLS with the user's CA: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	assertCleanFailure(t, sluice(t, withoutCA(env), "ls", "s3://bkt/"), exitError, "not trusted")

	d := t.TempDir()
	assertBadInputs(t, nil, t.TempDir(), []badInput{
		{"cert without key", []string{"serve-s3", "--dir", d, "--addr", "127.0.0.1:0", "--tls-cert", certFile}, exitUsage, "--tls-key"},
		{"tls and a cert", []string{"serve-s3", "--dir", d, "--addr", "127.0.0.1:0", "--tls", "--tls-cert", certFile, "--tls-key", keyFile}, exitUsage, "not both"},
		{"missing cert", []string{"serve-s3", "--dir", d, "--addr", "127.0.0.1:0", "--tls-cert", filepath.Join(files, "nope.pem"), "--tls-key", keyFile}, exitUsage, "nope.pem"},
		{"key of another", []string{"serve-s3", "--dir", d, "--addr", "127.0.0.1:0", "--tls-cert", caFile, "--tls-key", keyFile}, exitUsage, "--tls-cert/--tls-key"},
		{"bad body rate", []string{"serve-s3", "--dir", d, "--addr", "127.0.0.1:0", "--min-body-rate", "fast"}, exitUsage, "--min-body-rate"},
		{"per-client over max", []string{"serve-s3", "--dir", d, "--addr", "127.0.0.1:0", "--max-conns", "10", "--max-conns-per-client", "11"}, exitUsage, "--max-conns-per-client"},
	})
}

// writeCertificate writes a CA, and a certificate for 127.0.0.1 it signed
// with its key, as PEM files in dir: what a company's internal CA hands out.
func writeCertificate(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("cert.pem", "CERTIFICATE", der), write("key.pem", "PRIVATE KEY", keyDER)
}
