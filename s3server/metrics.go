package s3server

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// otherOperation labels the requests that name no operation this server
// serves (they are answered 501, or 403 when unsigned): labels come from
// the operation table, never from what a client sent.
const otherOperation = "Other"

// durationBuckets span a HEAD on loopback to a large object sent to a
// slow client.
var durationBuckets = prometheus.ExponentialBuckets(0.001, 4, 9) // 1ms .. 65s

// metrics are the server's collectors (Options.Metrics).
type metrics struct {
	requests *prometheus.CounterVec   // operation, code
	duration *prometheus.HistogramVec // operation
	received *prometheus.CounterVec   // operation
	sent     *prometheus.CounterVec   // operation
	inFlight prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_s3_requests_total",
			Help: "S3 requests answered, by operation and HTTP status code.",
		}, []string{"operation", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_s3_request_duration_seconds",
			Help:    "Time from a request's headers to the end of its handler (the response body sent), by operation.",
			Buckets: durationBuckets,
		}, []string{"operation"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_s3_received_bytes_total",
			Help: "Request body bytes read (as sent: aws-chunked framing included), by operation.",
		}, []string{"operation"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_s3_sent_bytes_total",
			Help: "Response body bytes written (object data, XML), by operation.",
		}, []string{"operation"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_s3_requests_in_flight",
			Help: "S3 requests being served.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.received, m.sent, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Every operation is there from the start, at zero, so that a rate
	// over the first requests is not lost.
	for _, op := range operationLabels() {
		m.duration.WithLabelValues(op)
		m.received.WithLabelValues(op)
		m.sent.WithLabelValues(op)
	}
	return m, nil
}

// operationLabels are every value the operation label takes.
func operationLabels() []string {
	ops := []string{"CopyObject", "UploadPartCopy", otherOperation}
	for _, op := range operations {
		ops = append(ops, op.name)
	}
	return ops
}

// operationLabel names a request's operation as S3 does: a PUT with a
// copy source is a copy.
func operationLabel(r *http.Request) string {
	name, _ := match(r)
	copySrc := r.Header.Get("X-Amz-Copy-Source") != ""
	switch {
	case name == "":
		return otherOperation
	case name == "PutObject" && copySrc:
		return "CopyObject"
	case name == "UploadPart" && copySrc:
		return "UploadPartCopy"
	}
	return name
}

// instrument counts every request next answers. It is outermost, so
// that refusals (unsigned, not implemented) are counted too; what
// net/http refuses itself (headers too large or too slow) never reaches
// a handler and is not.
func (m *metrics) instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		op := operationLabel(r)
		m.inFlight.Inc()
		cw := &countingWriter{ResponseWriter: w, code: http.StatusOK}
		var body *countingBody
		// http.NoBody stays itself: the handlers tell "no body" by it.
		if r.Body != nil && r.Body != http.NoBody {
			body = &countingBody{ReadCloser: r.Body}
			r.Body = body
		}
		defer func() {
			m.requests.WithLabelValues(op, strconv.Itoa(cw.code)).Inc()
			m.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
			m.sent.WithLabelValues(op).Add(float64(cw.n))
			if body != nil {
				m.received.WithLabelValues(op).Add(float64(body.n))
			}
			// Last: none in flight means every request is counted.
			m.inFlight.Dec()
		}()
		next.ServeHTTP(cw, r)
	})
}

// countingWriter records a response's status and counts its body bytes.
type countingWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
	n           int64
}

func (w *countingWriter) WriteHeader(code int) {
	// 1xx are interim: the final status comes after.
	if !w.wroteHeader && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.code, w.wroteHeader = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.wroteHeader = true
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// ReadFrom keeps net/http's sendfile(2) path for object bodies.
func (w *countingWriter) ReadFrom(r io.Reader) (int64, error) {
	w.wroteHeader = true
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(writerOnly{w.ResponseWriter}, r)
	}
	w.n += n
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countingBody counts the request body bytes read.
type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}
