package s3server_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluice-data/sluice/s3server"
)

// signedHead is the header block of a signed PUT of n bytes, the payload
// unsigned so that the server reads the body only after authenticating.
func signedHead(t *testing.T, srv *s3server.Server, key string, n int, secret string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, srv.Endpoint+"/bkt/"+key, http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(n)
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	creds := aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(srv.Endpoint)
	var b strings.Builder
	fmt.Fprintf(&b, "PUT /bkt/%s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", key, u.Host, n)
	for k, vs := range req.Header {
		fmt.Fprintf(&b, "%s: %s\r\n", k, vs[0])
	}
	b.WriteString("\r\n")
	return b.String()
}

// Hundreds of clients stalled mid-headers or mid-body neither stop the
// server answering others nor hold their connections past the timeouts,
// and an unauthenticated request is answered before its body arrives.
func TestStalledClients(t *testing.T) {
	const idle, header = 2 * time.Second, 2 * time.Second
	dir := t.TempDir()
	srv, err := s3server.Start(t.Context(), dir, "", s3server.Options{HeaderTimeout: header, IdleTimeout: idle, MaxConns: 400, MaxConnsPerClient: 400})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, dir: dir, client: newClient(t, srv.Endpoint, srv.AccessKey, srv.SecretKey)}
	f.put(t, "small", []byte("still served"))
	addr := strings.TrimPrefix(srv.Endpoint, "http://")

	// 150 stop inside their headers, 150 after 10 of 100 body bytes of a
	// signed PUT.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	opened := time.Now()
	for i := range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		msg := "PUT /bkt/stalled HTTP/1.1\r\nHost: " + addr + "\r\nX-Amz-Da"
		if i%2 == 1 {
			msg = signedHead(t, srv, fmt.Sprintf("stalled-%d", i), 100, srv.SecretKey) + "0123456789"
		}
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
	}

	// Another client is answered at once, repeatedly, while they stall.
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ps, err := s3.NewPresignClient(f.client).PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("small")})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		resp, err := hc.Get(ps.URL)
		if err != nil {
			t.Fatalf("a normal client while 300 stall: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "still served" {
			t.Fatalf("a normal client while 300 stall: %s %q", resp.Status, b)
		}
	}

	// An unauthenticated PUT announcing a body it never sends is refused
	// at once, and its connection closed.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, signedHead(t, srv, "forged", 100, "wrong-secret"))
	c.SetReadDeadline(time.Now().Add(idle / 2))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("an unauthenticated request with a pending body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("an unauthenticated request with a pending body: %s", resp.Status)
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("connection of a refused request: %v, want closed", err)
	}

	// Every stalled connection is closed by the server once its timeout
	// has passed (a body timeout may be answered before the close).
	var wg sync.WaitGroup
	closedAfter := make([]time.Duration, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(opened.Add(idle + header + 5*time.Second))
			_, err := io.Copy(io.Discard, c)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				closedAfter[i] = -1
				return
			}
			closedAfter[i] = time.Since(opened)
		}()
	}
	wg.Wait()
	for i, d := range closedAfter {
		if d < 0 {
			t.Errorf("stalled connection %d still open %v after it was opened", i, idle+header+5*time.Second)
		}
	}
	// And none of the stalled uploads left an object or a temporary file.
	ents, _ := os.ReadDir(filepath.Join(dir, "bkt"))
	if len(ents) != 1 {
		t.Errorf("bucket holds %d entries, want only the one put", len(ents))
	}
	if tmp, _ := os.ReadDir(filepath.Join(dir, ".s3server", "tmp")); len(tmp) != 0 {
		t.Errorf("%d temporary files left", len(tmp))
	}
}

// A header block over the limit is refused, not read on.
func TestHeaderLimit(t *testing.T) {
	srv, err := s3server.Start(t.Context(), t.TempDir(), "", s3server.Options{MaxHeaderSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.Endpoint+"/", nil)
	req.Header.Set("X-Big", rand.Text()+strings.Repeat("x", 16<<10))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized headers: %s", resp.Status)
	}
}
