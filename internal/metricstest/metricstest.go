// Package metricstest scrapes Prometheus metrics over HTTP in tests, as a
// Prometheus server would, and looks their samples up by name and labels.
package metricstest

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Serve serves g's metrics (promhttp) on a loopback server until the test
// ends, and returns their URL.
func Serve(t testing.TB, g prometheus.Gatherer) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// Sample is one series' value. A histogram gives NAME_count, NAME_sum
// and NAME_bucket (with its le label).
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples are a scrape's series.
type Samples []Sample

// Get is the value of the series of name with exactly these labels (name,
// value pairs); a series the scrape lacks fails the test.
func (s Samples) Get(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	want := pairs(labels)
	for _, x := range s {
		if x.Name == name && maps.Equal(x.Labels, want) {
			return x.Value
		}
	}
	t.Fatalf("metrics: no series %s%v", name, want)
	return 0
}

// Sum adds up the series of name whose labels include the given name,
// value pairs (the other labels any).
func (s Samples) Sum(name string, labels ...string) float64 {
	want := pairs(labels)
	var sum float64
next:
	for _, x := range s {
		if x.Name != name {
			continue
		}
		for k, v := range want {
			if x.Labels[k] != v {
				continue next
			}
		}
		sum += x.Value
	}
	return sum
}

// Series lists the label sets of name's series.
func (s Samples) Series(name string) []map[string]string {
	var out []map[string]string
	for _, x := range s {
		if x.Name == name {
			out = append(out, x.Labels)
		}
	}
	return out
}

func pairs(labels []string) map[string]string {
	if len(labels)%2 != 0 {
		panic("metricstest: labels come in name, value pairs")
	}
	m := map[string]string{}
	for i := 0; i < len(labels); i += 2 {
		m[labels[i]] = labels[i+1]
	}
	return m
}

// Settled scrapes url until the gauge inFlight is 0 and the counters
// named total sum to want, and returns those samples: a server counts a
// request after its client has the answer, so the last ones land a
// moment after the client is done. It fails the test after 10 s.
func Settled(t testing.TB, url, inFlight, total string, want int) Samples {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		m := Scrape(t, url, nil)
		if m.Get(t, inFlight) == 0 && m.Sum(total) == float64(want) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %v, %v %s; want 0 and %d", inFlight, m.Get(t, inFlight), m.Sum(total), total, want)
		}
		time.Sleep(10 * time.Millisecond) // polling what the server counts
	}
}

// Scrape gets url with the given header (nil: none) and parses the text
// exposition format; anything else fails the test.
func Scrape(t testing.TB, url string, header http.Header) Samples {
	t.Helper()
	s, err := scrape(url, header)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	return s
}

func scrape(url string, header http.Header) (Samples, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	// The text format, whatever the server would negotiate otherwise.
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	var s Samples
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			add := func(name string, v float64, extra ...string) {
				ls := pairs(extra)
				for _, l := range m.GetLabel() {
					ls[l.GetName()] = l.GetValue()
				}
				s = append(s, Sample{Name: name, Labels: ls, Value: v})
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				add(name+"_count", float64(h.GetSampleCount()))
				add(name+"_sum", h.GetSampleSum())
				for _, b := range h.GetBucket() {
					add(name+"_bucket", float64(b.GetCumulativeCount()), "le", fmt.Sprint(b.GetUpperBound()))
				}
			case dto.MetricType_SUMMARY:
				add(name+"_count", float64(m.GetSummary().GetSampleCount()))
				add(name+"_sum", m.GetSummary().GetSampleSum())
			}
		}
	}
	return s, nil
}
