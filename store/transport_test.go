package store_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-data/sluice/store"
)

// stallServer answers GET /body with some bytes and then stalls until the
// test ends, and GET /headers by stalling before any headers.
func stallServer(t *testing.T) *httptest.Server {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/body":
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte(strings.Repeat("x", 100)))
			w.(http.Flusher).Flush()
		case "/slow":
			// Progress every 20ms, 30 times: far longer than the
			// stall timeout in total, never stalled. The pace is the
			// input, not synchronisation.
			w.Header().Set("Content-Length", "30")
			for range 30 {
				w.Write([]byte("y"))
				w.(http.Flusher).Flush()
				time.Sleep(20 * time.Millisecond)
			}
			return
		case "/headers":
		}
		select {
		case <-done:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() {
		close(done)
		srv.Close()
	})
	return srv
}

func get(t *testing.T, tr *store.Transport, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr.RoundTrip(req)
}

func TestTransportStalledBody(t *testing.T) {
	srv := stallServer(t)
	tr := store.NewTransport(store.Options{StallTimeout: 200 * time.Millisecond})
	defer tr.CloseIdleConnections()

	resp, err := get(t, tr, srv.URL+"/body")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	n, err := io.Copy(io.Discard, resp.Body)
	if n != 100 {
		t.Errorf("read %d bytes before the stall, want 100", n)
	}
	var se *store.StallError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *StallError", err)
	}
	if !errors.Is(err, store.ErrRetryable) || store.KindOf(err) != store.KindRetryable {
		t.Errorf("a stall must be retryable; kind %v", store.KindOf(err))
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("stall noticed after %v, want about 200ms", el)
	}
}

func TestTransportStalledHeaders(t *testing.T) {
	srv := stallServer(t)
	tr := store.NewTransport(store.Options{StallTimeout: 200 * time.Millisecond})
	defer tr.CloseIdleConnections()

	_, err := get(t, tr, srv.URL+"/headers")
	var se *store.StallError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *StallError", err)
	}
	if got := se.Error(); strings.Contains(got, "\n") || !strings.Contains(got, "stalled") {
		t.Errorf("message %q", got)
	}
}

func TestTransportSlowButProgressing(t *testing.T) {
	srv := stallServer(t)
	tr := store.NewTransport(store.Options{StallTimeout: 200 * time.Millisecond})
	defer tr.CloseIdleConnections()

	resp, err := get(t, tr, srv.URL+"/slow")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || len(b) != 30 {
		t.Fatalf("read %d bytes, err %v; a body that keeps progressing must not be cancelled", len(b), err)
	}
}

// A consumer that pauses between Reads (backpressure) is not a stall.
func TestTransportConsumerPause(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello"))
	}))
	defer srv.Close()
	tr := store.NewTransport(store.Options{StallTimeout: 100 * time.Millisecond})
	defer tr.CloseIdleConnections()

	resp, err := get(t, tr, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	time.Sleep(400 * time.Millisecond) // the pause, past the stall timeout, is the input
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "hello" {
		t.Fatalf("got %q, %v", b, err)
	}
}

func TestTransportWatchdogDisabled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // a slow server, the input
		w.Write([]byte("late"))
	}))
	defer srv.Close()
	tr := store.NewTransport(store.Options{StallTimeout: -1})
	defer tr.CloseIdleConnections()

	resp, err := get(t, tr, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "late" {
		t.Fatalf("got %q, %v", b, err)
	}
}

// Many parallel requests reuse connections instead of opening new ones
// after the first wave (Go's default keeps only 2 idle per host).
func TestTransportKeepsIdleConnections(t *testing.T) {
	var conns = make(chan struct{}, 1000)
	// Each wave's requests are answered only once all 32 have arrived,
	// so every wave needs 32 connections at once whatever the load: the
	// first opens them, the second must find them idle.
	var mu sync.Mutex
	var arrived int
	gate := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		g := gate
		if arrived++; arrived == 32 {
			close(gate)
		}
		mu.Unlock()
		select {
		case <-g:
		case <-time.After(10 * time.Second):
			t.Error("a wave's 32 requests did not all arrive")
		}
		w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns <- struct{}{}
		}
	}
	srv.Start()
	defer srv.Close()
	tr := store.NewTransport(store.Options{Concurrency: 32})
	defer tr.CloseIdleConnections()

	wave := func() {
		mu.Lock()
		arrived, gate = 0, make(chan struct{})
		mu.Unlock()
		errs := make(chan error, 32)
		for range 32 {
			go func() {
				resp, err := get(t, tr, srv.URL)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errs <- err
			}()
		}
		for range 32 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}
	wave()
	first := len(conns)
	wave()
	if first != 32 {
		t.Fatalf("the first wave opened %d connections, want 32", first)
	}
	if opened := len(conns) - first; opened > 0 {
		t.Errorf("second wave opened %d new connections; idle ones should be reused", opened)
	}
}
