package flightsvc

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// metrics are a Server's collectors (ServerOptions.Metrics). They are
// fed by the outermost interceptors, so calls refused for want of a token
// are counted too. Only the Flight service's registered methods reach an
// interceptor (gRPC answers others itself), so the method label is
// bounded by the service.
type metrics struct {
	calls    *prometheus.CounterVec   // method, code
	duration *prometheus.HistogramVec // method
	sent     *prometheus.CounterVec   // method
	inFlight prometheus.Gauge
	batches  prometheus.Counter
	rows     prometheus.Counter
}

// durationBuckets span a GetSchema to a long DoGet stream.
var durationBuckets = prometheus.ExponentialBuckets(0.001, 4, 9) // 1ms .. 65s

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_flight_calls_total",
			Help: "Arrow Flight calls finished, by method and gRPC status code.",
		}, []string{"method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_flight_call_duration_seconds",
			Help:    "Time from a call's start to its end (a DoGet's whole stream), by method.",
			Buckets: durationBuckets,
		}, []string{"method"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_flight_sent_bytes_total",
			Help: "Bytes of the response messages sent (serialized protobuf, before gRPC framing), by method.",
		}, []string{"method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_flight_calls_in_flight",
			Help: "Arrow Flight calls in progress.",
		}),
		batches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_flight_sent_batches_total",
			Help: "Record batches DoGet sent.",
		}),
		rows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_flight_sent_rows_total",
			Help: "Rows of the record batches DoGet sent.",
		}),
	}
	reg.MustRegister(m.calls, m.duration, m.sent, m.inFlight, m.batches, m.rows)
	return m
}

// known puts every method of the server's services there from the
// start, at zero.
func (m *metrics) known(srv *grpc.Server) {
	for _, info := range srv.GetServiceInfo() {
		for _, md := range info.Methods {
			m.duration.WithLabelValues(md.Name)
			m.sent.WithLabelValues(md.Name)
		}
	}
}

// methodName is the method of "/package.Service/Method".
func methodName(full string) string {
	return full[strings.LastIndexByte(full, '/')+1:]
}

// done counts a call that took from start and ended with err. In flight
// drops last: none in flight means every call is counted.
func (m *metrics) done(method string, start time.Time, sent int64, err error) {
	m.calls.WithLabelValues(method, status.Code(err).String()).Inc()
	m.duration.WithLabelValues(method).Observe(time.Since(start).Seconds())
	m.sent.WithLabelValues(method).Add(float64(sent))
	m.inFlight.Dec()
}

func (m *metrics) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	start := time.Now()
	m.inFlight.Inc()
	var sent int64
	var err error
	defer func() { m.done(methodName(info.FullMethod), start, sent, err) }()
	var resp any
	resp, err = h(ctx, req)
	if msg, ok := resp.(proto.Message); ok && err == nil {
		sent = int64(proto.Size(msg))
	}
	return resp, err
}

func (m *metrics) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	start := time.Now()
	m.inFlight.Inc()
	cs := &countingStream{ServerStream: ss}
	var err error
	defer func() { m.done(methodName(info.FullMethod), start, cs.sent, err) }()
	err = h(srv, cs)
	return err
}

// countingStream counts the bytes of the messages a stream sends.
type countingStream struct {
	grpc.ServerStream
	sent int64
}

func (s *countingStream) SendMsg(msg any) error {
	err := s.ServerStream.SendMsg(msg)
	if pm, ok := msg.(proto.Message); ok && err == nil {
		s.sent += int64(proto.Size(pm))
	}
	return err
}

// batch counts a record batch DoGet sent; m may be nil.
func (m *metrics) batch(rows int64) {
	if m == nil {
		return
	}
	m.batches.Inc()
	m.rows.Add(float64(rows))
}
