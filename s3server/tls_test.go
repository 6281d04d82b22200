package s3server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluice-data/sluice/s3server"
)

// startTLS starts a server that makes its own certificate, with a bucket.
func startTLS(t *testing.T, opts s3server.Options) *fixture {
	t.Helper()
	opts.SelfSignedTLS = true
	dir := t.TempDir()
	srv, err := s3server.Start(t.Context(), dir, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, dir: dir}
}

// tlsClient is an S3 client that trusts roots (nil: the system's).
func tlsClient(t *testing.T, srv *s3server.Server, roots *x509.CertPool) *s3.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	t.Cleanup(tr.CloseIdleConnections)
	return s3.New(s3.Options{
		Region:       srv.Region,
		BaseEndpoint: aws.String(srv.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		HTTPClient:   &http.Client{Transport: tr, Timeout: 10 * time.Second},
	})
}

// A server that makes its own certificate speaks HTTPS with one its CA
// (written to CAFile, named in Env) signed for 127.0.0.1 and localhost;
// a client trusting that CA is served, one that does not is refused by
// its own TLS, and a connection that never says hello is closed after the
// header timeout.
func TestSelfSignedTLS(t *testing.T) {
	const header = time.Second
	f := startTLS(t, s3server.Options{HeaderTimeout: header})
	srv := f.srv
	if !strings.HasPrefix(srv.Endpoint, "https://127.0.0.1:") {
		t.Errorf("endpoint %s, want https://127.0.0.1:PORT", srv.Endpoint)
	}
	if !slices.Contains(srv.Env(), "AWS_CA_BUNDLE="+srv.CAFile) {
		t.Errorf("Env() %q does not name the CA file %s", srv.Env(), srv.CAFile)
	}
	caPEM, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s holds no PEM certificate", srv.CAFile)
	}

	ctx := context.Background()
	c := tlsClient(t, srv, roots)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("over TLS")}); err != nil {
		t.Fatalf("put over TLS trusting the CA: %v", err)
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if err != nil {
		t.Fatalf("get over TLS trusting the CA: %v", err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != "over TLS" {
		t.Errorf("get over TLS: %q", b)
	}

	// The certificate names localhost too, and is signed by the CA, not
	// the CA itself; only HTTP/1.1 is offered.
	addr := strings.TrimPrefix(srv.Endpoint, "https://")
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Errorf("TLS to %s as localhost: %v", addr, err)
	} else {
		st := conn.ConnectionState()
		leaf := st.PeerCertificates[0]
		if leaf.IsCA || st.NegotiatedProtocol != "http/1.1" {
			t.Errorf("leaf certificate IsCA %v, protocol %q; want a leaf and http/1.1", leaf.IsCA, st.NegotiatedProtocol)
		}
		conn.Close()
	}

	var unknown x509.UnknownAuthorityError
	_, err = tlsClient(t, srv, x509.NewCertPool()).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")})
	if !errors.As(err, &unknown) {
		t.Errorf("a client not trusting the CA: %v, want x509.UnknownAuthorityError", err)
	}

	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	began := time.Now()
	raw.SetReadDeadline(began.Add(header + 5*time.Second))
	if _, err := io.Copy(io.Discard, raw); err != nil {
		t.Errorf("a connection that never says hello: %v, want closed", err)
	}
	if took := time.Since(began); took < header*9/10 || took > header+2*time.Second {
		t.Errorf("a connection that never says hello closed after %v, want the header timeout (%v)", took, header)
	}

	if _, err := s3server.Start(t.Context(), t.TempDir(), "", s3server.Options{TLS: &tls.Config{}, SelfSignedTLS: true}); err == nil {
		t.Error("Start with TLS and SelfSignedTLS both: no error")
	}
}
