package store_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/store"
)

// privateCA makes a CA and a certificate it signed for 127.0.0.1, as a
// company's internal CA would: trusted by nobody until told.
func privateCA(t *testing.T) (caPEM []byte, leaf tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// proxy serves handler-decided answers in front of an S3 endpoint: the
// Host header goes through unchanged, so signatures still verify.
func proxy(t *testing.T, backend string) *httputil.ReverseProxy {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	rp.Transport = tr
	return rp
}

// isolateAWSConfig points the SDK's config files at empty ones and clears
// the variables these tests set, so the caller's setup plays no part.
func isolateAWSConfig(t *testing.T) (configFile string) {
	dir := t.TempDir()
	configFile = filepath.Join(dir, "config")
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             configFile,
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_CA_BUNDLE":               "",
		"AWS_PROFILE":                 "",
		"AWS_ENDPOINT_URL":            "",
		"AWS_ENDPOINT_URL_S3":         "",
	} {
		t.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k)
		}
	}
	return configFile
}

// A TLS endpoint whose certificate a private CA signed is reached with
// that CA given only as AWS_CA_BUNDLE, or as ca_bundle in the shared
// config, the ways the aws CLI takes it; without it the error says what
// to set.
func TestS3CABundle(t *testing.T) {
	forEachS3(t, testCABundle)
}

func testCABundle(t *testing.T, tg s3Target) {
	caPEM, leaf := privateCA(t)
	ts := httptest.NewUnstartedServer(proxy(t, tg.endpoint))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	ts.StartTLS()
	defer ts.Close()
	configFile := isolateAWSConfig(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	tls := s3Target{endpoint: ts.URL, accessKey: tg.accessKey, secretKey: tg.secretKey}
	roundTrip := func(name string) error {
		t.Helper()
		st := tls.open(t, tg.bucket)
		data := []byte("over TLS: " + name)
		if _, err := st.Put(ctx, "tls/"+name, bytes.NewReader(data), store.WriteOptions{}); err != nil {
			return err
		}
		got, err := st.ReadAll(ctx, "tls/"+name)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, data) {
			t.Errorf("%s: read back %q", name, got)
		}
		return st.Delete(ctx, "tls/"+name)
	}

	err := roundTrip("untrusted")
	if err == nil {
		t.Fatal("a certificate of an unknown CA was accepted")
	}
	if store.KindOf(err) != store.KindPermanent || !strings.Contains(oneLine(t, err), "AWS_CA_BUNDLE") {
		t.Errorf("untrusted certificate: kind %v, %v; want a permanent error that names AWS_CA_BUNDLE", store.KindOf(err), err)
	}

	t.Setenv("AWS_CA_BUNDLE", caFile)
	if err := roundTrip("env"); err != nil {
		t.Fatalf("with AWS_CA_BUNDLE: %v", err)
	}
	os.Unsetenv("AWS_CA_BUNDLE")

	if err := os.WriteFile(configFile, []byte("[profile private-ca]\nca_bundle = "+caFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_PROFILE", "private-ca")
	if err := roundTrip("profile"); err != nil {
		t.Fatalf("with ca_bundle in the shared config: %v", err)
	}
}
