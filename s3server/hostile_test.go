package s3server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluice-data/sluice/s3server"
)

// The hostile client of these probes dials from 127.0.0.2, the normal one
// from 127.0.0.1: two clients to the server's per-client caps, on one
// machine (Linux routes all of 127/8 to loopback).
var hostileAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// startHostile starts a server with opts and a bucket holding "small".
func startHostile(t *testing.T, opts s3server.Options) *fixture {
	t.Helper()
	dir := t.TempDir()
	srv, err := s3server.Start(t.Context(), dir, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, dir: dir, client: newClient(t, srv.Endpoint, srv.AccessKey, srv.SecretKey)}
	f.put(t, "small", []byte("still served"))
	return f
}

// probe runs n hostile connections until ctx is done, each reopened as
// soon as the server closes it (100 ms later if it was closed at once):
// open dials one and sends what it sends,
// then the server's answer (if any) is read to the close and handed to
// closed with the time the connection lasted.
func probe(ctx context.Context, t *testing.T, addr string, n int, open func(c net.Conn) error, closed func(answer []byte, lasted time.Duration)) *sync.WaitGroup {
	t.Helper()
	d := net.Dialer{LocalAddr: hostileAddr}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					if ctx.Err() == nil {
						// The listen queue full, say: the next try will do
						// (the hostile client's pace, not synchronisation).
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				stop := context.AfterFunc(ctx, func() { c.Close() })
				began := time.Now()
				var answer []byte
				if open(c) == nil {
					answer, _ = io.ReadAll(c)
				}
				lasted := time.Since(began)
				c.Close()
				if stop() {
					closed(answer, lasted)
				}
				if lasted < 10*time.Millisecond {
					// Closed at once: a pause, so that the probe's own
					// reconnecting, on the cores the server and the normal
					// client share, does not take them over (its pace, not
					// synchronisation).
					time.Sleep(100 * time.Millisecond)
				}
			}
		})
	}
	return &wg
}

// normalClient GETs "small" over a new connection every 50 ms until ctx is
// done and returns the slowest answer and how many there were; any
// failure, or an answer slower than 1 s, is an error.
func normalClient(ctx context.Context, t *testing.T, f *fixture) (worst time.Duration, n int) {
	t.Helper()
	ps, err := s3.NewPresignClient(f.client).PresignGetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("small")})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return worst, n
		case <-tick.C:
		}
		began := time.Now()
		resp, err := hc.Get(ps.URL)
		if err != nil {
			t.Errorf("a normal client: %v", err)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(began)
		worst, n = max(worst, took), n+1
		if err != nil || resp.StatusCode != http.StatusOK || string(b) != "still served" {
			t.Errorf("a normal client: %s %q, %v", resp.Status, b, err)
		}
		if took > time.Second {
			t.Errorf("a normal client waited %v for an answer", took)
		}
	}
}

// Slowloris: 300 connections from one client that never finish their
// headers, each reopened as the server closes it, against a server of 100
// connections. They get the client's 25 places (held for the header
// timeout) and no more; another client is answered within 1 s throughout.
func TestSlowloris(t *testing.T) {
	const header = time.Second
	f := startHostile(t, s3server.Options{HeaderTimeout: header, MaxConns: 100})
	addr := strings.TrimPrefix(f.srv.Endpoint, "http://")

	ctx, cancel := context.WithTimeout(t.Context(), 4*header)
	defer cancel()
	var held, refused atomic.Int64 // connections kept for the header timeout, closed at once
	wg := probe(ctx, t, addr, 300, func(c net.Conn) error {
		_, err := io.WriteString(c, "GET /bkt/small HTTP/1.1\r\nHost: "+addr+"\r\nX-Amz-Da")
		return err
	}, func(answer []byte, lasted time.Duration) {
		switch {
		case lasted >= header*9/10:
			held.Add(1)
		case lasted < header/2:
			refused.Add(1)
		}
	})
	worst, n := normalClient(ctx, t, f)
	wg.Wait()
	t.Logf("slowloris (300 from one client, MaxConns 100, 25 a client, header timeout %v): normal client's worst of %d answers %v; hostile connections held %d, closed at once %d",
		header, n, worst, held.Load(), refused.Load())
	// Held for the header timeout, 25 at a time, over 4 of them.
	if h := held.Load(); h < 25 || h > 4*25+25 {
		t.Errorf("%d hostile connections held for the header timeout, want 25 per timeout", h)
	}
	if refused.Load() == 0 {
		t.Errorf("no hostile connection closed at once: no per-client cap")
	}
}

// Stalled bodies: 300 signed PUTs from one client that send 10 of 100,000
// bytes and stall, each reopened as the server answers it. Those served
// are answered 400 RequestTimeout once their grace is spent (the body
// must come at MinBodyRate; the idle timeout is far longer); another
// client is answered within 1 s throughout; nothing is left on disk.
func TestStalledBodies(t *testing.T) {
	const grace = time.Second
	f := startHostile(t, s3server.Options{MaxConns: 100, MinBodyRate: 1000, BodyGrace: grace, IdleTimeout: time.Minute})
	addr := strings.TrimPrefix(f.srv.Endpoint, "http://")
	head := signedHead(t, f.srv, "stalled", 100_000, f.srv.SecretKey)

	ctx, cancel := context.WithTimeout(t.Context(), 4*grace)
	defer cancel()
	var mu sync.Mutex
	answers := map[string]int{}
	var slowest time.Duration
	wg := probe(ctx, t, addr, 300, func(c net.Conn) error {
		_, err := io.WriteString(c, head+"0123456789")
		return err
	}, func(answer []byte, lasted time.Duration) {
		code := "closed"
		if len(answer) > 0 {
			code = answerCode(answer)
		}
		mu.Lock()
		defer mu.Unlock()
		answers[code]++
		if code == "RequestTimeout" {
			slowest = max(slowest, lasted)
		}
	})
	worst, n := normalClient(ctx, t, f)
	wg.Wait()
	t.Logf("stalled bodies (300 from one client, MaxConns 100, 25 a client, %v grace at 1000 B/s): normal client's worst of %d answers %v; hostile answers %v, the slowest RequestTimeout after %v",
		grace, n, worst, answers, slowest)
	if answers["RequestTimeout"] < 25 {
		t.Errorf("hostile answers %v: want RequestTimeout for each served", answers)
	}
	for code := range answers {
		if code != "RequestTimeout" && code != "closed" {
			t.Errorf("hostile answers %v: want only RequestTimeout, or closed at once", answers)
		}
	}
	// 10 bytes at 1000 B/s after the grace: 1.01 s of waiting for the
	// body, plus the wait to be accepted and answered on a loaded
	// machine; far less than the idle timeout.
	if slowest > 3*grace {
		t.Errorf("a stalled body answered after %v, want after about %v", slowest, grace+10*time.Millisecond)
	}
	noLeftovers(t, f, 1)
}

// answerCode is the S3 error code of a raw HTTP answer, with its status.
func answerCode(answer []byte) string {
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(answer))), nil)
	if err != nil {
		return "unparsable"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	code, _, _ := strings.Cut(string(b), "</Code>")
	_, code, _ = strings.Cut(code, "<Code>")
	if resp.StatusCode != http.StatusBadRequest {
		return fmt.Sprintf("%d %s", resp.StatusCode, code)
	}
	return code
}

// noLeftovers stops the server and checks that the bucket holds only n
// objects and that no temporary file is left. Close waits for the
// requests in progress (a hostile client's closing does not): what they
// leave then is left for good.
func noLeftovers(t *testing.T, f *fixture, n int) {
	t.Helper()
	if err := f.srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(f.dir, "bkt"))
	if len(ents) != n {
		t.Errorf("bucket holds %d entries, want %d", len(ents), n)
	}
	if tmp, _ := os.ReadDir(filepath.Join(f.dir, ".s3server", "tmp")); len(tmp) != 0 {
		t.Errorf("%d temporary files left", len(tmp))
	}
}

// A body that ends before its Content-Length is 400 IncompleteBody; one
// slower than MinBodyRate allows, or that pauses longer than the idle
// timeout, is 400 RequestTimeout, when its grace is spent; one that keeps
// the pace is stored. Nothing of the others is.
func TestBodyAnswers(t *testing.T) {
	const grace = 500 * time.Millisecond
	f := startHostile(t, s3server.Options{MinBodyRate: 1000, BodyGrace: grace, IdleTimeout: 2 * time.Second})
	addr := strings.TrimPrefix(f.srv.Endpoint, "http://")
	send := func(key string, n int, body func(c *net.TCPConn) error) (string, time.Duration) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		began := time.Now()
		if _, err := io.WriteString(c, signedHead(t, f.srv, key, n, f.srv.SecretKey)); err != nil {
			t.Fatal(err)
		}
		// The body is sent while the answer is read: a server that
		// answers mid-body is timed by its answer.
		sent := make(chan error, 1)
		go func() { sent <- body(c.(*net.TCPConn)) }()
		answer, rerr := io.ReadAll(c)
		took := time.Since(began)
		c.Close()
		if err := <-sent; err != nil {
			t.Fatalf("%s: sending: %v", key, err)
		}
		if rerr != nil {
			t.Fatalf("%s: reading the answer: %v", key, rerr)
		}
		code := answerCode(answer)
		t.Logf("%s: %s after %v", key, code, took.Round(time.Millisecond))
		return code, took
	}
	// paced sends n bytes in pieces of size every interval.
	paced := func(n, size int, every time.Duration) func(c *net.TCPConn) error {
		return func(c *net.TCPConn) error {
			for sent := 0; sent < n; sent += size {
				if _, err := c.Write([]byte(strings.Repeat("x", min(size, n-sent)))); err != nil {
					return nil // answered and closed mid-body: read the answer
				}
				time.Sleep(every) // a slow client's pace: the input
			}
			return nil
		}
	}

	code, _ := send("truncated", 100, func(c *net.TCPConn) error {
		if _, err := io.WriteString(c, "0123456789"); err != nil {
			return err
		}
		return c.CloseWrite()
	})
	if code != "IncompleteBody" {
		t.Errorf("a body cut short at 10 of 100 bytes: %s, want 400 IncompleteBody", code)
	}

	// 100 B/s where 1000 are due: 500 ms of grace, then 1000 B/s is ahead
	// of it by 1/10 of the time waited.
	code, took := send("slow", 100_000, paced(100_000, 10, 100*time.Millisecond))
	if code != "RequestTimeout" || took < grace || took > grace+time.Second {
		t.Errorf("a body at 100 B/s: %s after %v, want 400 RequestTimeout after about %v", code, took, grace)
	}

	// A byte a second keeps no connection idle for the idle timeout
	// (2 s), but is far from the rate.
	code, took = send("dribble", 100, paced(100, 1, time.Second))
	if code != "RequestTimeout" || took > grace+time.Second+500*time.Millisecond {
		t.Errorf("a body at 1 B/s: %s after %v, want 400 RequestTimeout within about %v", code, took, grace+time.Second)
	}

	// A sender that stops after a fast start has earned credit, but not
	// past the idle timeout.
	code, took = send("paused", 100_000, func(c *net.TCPConn) error {
		_, err := c.Write([]byte(strings.Repeat("x", 50_000)))
		return err
	})
	if code != "RequestTimeout" || took < 2*time.Second || took > 4*time.Second {
		t.Errorf("a body that stops half-way: %s after %v, want 400 RequestTimeout after the idle timeout (2 s)", code, took)
	}

	// 4000 B/s keeps the pace: 4000 bytes in a second are stored.
	code, _ = send("paced", 4000, func(c *net.TCPConn) error {
		if err := paced(4000, 400, 100*time.Millisecond)(c); err != nil {
			return err
		}
		return c.CloseWrite()
	})
	if code != "200 " {
		t.Errorf("a body at 4000 B/s: %s, want 200", code)
	}
	noLeftovers(t, f, 2)
}
