package metricsrv

import (
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/internal/metricstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServe: the registry's metrics, the Go and process ones among them,
// are served at /metrics, behind the token when there is one; a remote
// address is refused unless allowed.
func TestServe(t *testing.T) {
	reg := NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_things_total", Help: "Things."})
	reg.MustRegister(c)
	c.Add(3)

	s, err := Start("127.0.0.1:0", reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := metricstest.Scrape(t, s.URL, nil)
	if v := m.Get(t, "test_things_total"); v != 3 {
		t.Errorf("test_things_total %v, want 3", v)
	}
	if len(m.Series("go_goroutines")) != 1 || len(m.Series("process_start_time_seconds")) != 1 {
		t.Errorf("no Go or process collector: %d, %d series", len(m.Series("go_goroutines")), len(m.Series("process_start_time_seconds")))
	}
	if resp, err := http.Get(s.URL[:len(s.URL)-len("/metrics")] + "/other"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("another path: %v, %v", resp.Status, err)
	} else {
		resp.Body.Close()
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(s.URL); err == nil {
		t.Error("served after Close")
	}

	s, err = Start("localhost:0", reg, Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, h := range []string{"", "Bearer other", "tok"} {
		req, _ := http.NewRequest(http.MethodGet, s.URL, nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("authorization %q: %s, want 401", h, resp.Status)
		}
	}
	m = metricstest.Scrape(t, s.URL, http.Header{"Authorization": {"Bearer tok"}})
	if v := m.Get(t, "test_things_total"); v != 3 {
		t.Errorf("with the token: test_things_total %v, want 3", v)
	}

	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0"} {
		if _, err := Start(addr, reg, Options{}); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("%s: %v, want ErrNotLoopback", addr, err)
		}
	}
	if _, err := Start("no-port", reg, Options{}); err == nil {
		t.Error("an address without a port was taken")
	}
	remote, err := Start(":0", reg, Options{Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	remote.Close()
}

// TestStartAddrErrors: each refusal of the address is an ErrAddr in words
// naming --metrics-addr; one reachable from other machines is an
// ErrNotLoopback too, and one taken still matches EADDRINUSE.
func TestStartAddrErrors(t *testing.T) {
	reg := NewRegistry()
	taken, err := Start("127.0.0.1:0", reg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if !taken.Loopback {
		t.Error("127.0.0.1:0: Loopback false")
	}
	takenAddr := strings.TrimSuffix(strings.TrimPrefix(taken.URL, "http://"), "/metrics")
	for _, c := range []struct {
		addr        string
		want        string
		notLoopback bool
		inUse       bool
	}{
		{"no-port", `bad --metrics-addr "no-port": address no-port: missing port in address`, false, false},
		{"0.0.0.0:0", "--metrics-addr 0.0.0.0:0 is reachable from other machines", true, false},
		{":0", "--metrics-addr :0 is reachable from other machines", true, false},
		{"192.0.2.1:0", "--metrics-addr 192.0.2.1:0 is reachable from other machines", true, false},
		{takenAddr, "--metrics-addr " + takenAddr + " is taken: give another port, or 127.0.0.1:0 for a free one", false, true},
	} {
		_, err := Start(c.addr, reg, Options{})
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrAddr) ||
			errors.Is(err, ErrNotLoopback) != c.notLoopback || errors.Is(err, syscall.EADDRINUSE) != c.inUse {
			t.Errorf("%s: %v; want ErrAddr saying %q (ErrNotLoopback %v, EADDRINUSE %v)", c.addr, err, c.want, c.notLoopback, c.inUse)
		}
	}
	remote, err := Start(":0", reg, Options{Remote: true})
	if err != nil {
		t.Fatal(err)
	}
	if remote.Loopback {
		t.Error(":0: Loopback true")
	}
	remote.Close()
}
