package store

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// The CA bundle the SDK's loader parsed is taken over into the tuned
// transport, which keeps its own settings.
func TestUseCABundleKeepsTransport(t *testing.T) {
	pool := x509.NewCertPool()
	cfg := aws.Config{HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	})}
	tr := NewTransport(Options{Concurrency: 100})
	if err := useCABundle(tr, cfg); err != nil {
		t.Fatal(err)
	}
	if tr.base.TLSClientConfig == nil || tr.base.TLSClientConfig.RootCAs != pool {
		t.Fatal("the loader's root CAs were not taken over")
	}
	if tr.base.MaxIdleConnsPerHost != 100 || !tr.base.DisableCompression {
		t.Errorf("tuned settings lost: idle per host %d, compression disabled %v", tr.base.MaxIdleConnsPerHost, tr.base.DisableCompression)
	}

	// Without a bundle the system's roots stay in force.
	tr = NewTransport(Options{})
	if err := useCABundle(tr, aws.Config{HTTPClient: awshttp.NewBuildableClient()}); err != nil {
		t.Fatal(err)
	}
	if tc := tr.base.TLSClientConfig; tc != nil && tc.RootCAs != nil {
		t.Error("root CAs set without a bundle")
	}
}

// An error body comes from the server: any bytes give a valid region name
// or none, never a panic.
func FuzzErrorBodyRegion(f *testing.F) {
	for _, s := range []string{
		`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AuthorizationHeaderMalformed</Code><Region>eu-west-1</Region></Error>`,
		`<Error><Region>evil.example.com/x</Region></Error>`,
		`<Error><Region></Region>`, "", "not xml",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := errorBodyRegion(body)
		if r != "" && !validRegion(r) {
			t.Fatalf("region %q from %q", r, body)
		}
	})
}

func TestErrorBodyRegion(t *testing.T) {
	for body, want := range map[string]string{
		`<Error><Code>AuthorizationHeaderMalformed</Code><Region>eu-west-1</Region></Error>`: "eu-west-1",
		`<Error><Region>evil.example.com/x</Region></Error>`:                                 "",
		`<Error><Code>NoSuchKey</Code></Error>`:                                              "",
	} {
		if got := errorBodyRegion([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}
