package flightsvc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-data/sluice/internal/metricstest"
)

// recvCounter adds up the size of the messages a stream receives.
type recvCounter[T proto.Message] struct {
	recv func() (T, error)
	n    int64
	msgs int
}

func (c *recvCounter[T]) Recv() (T, error) {
	m, err := c.recv()
	if err == nil {
		c.n += int64(proto.Size(m))
		c.msgs++
	}
	return m, err
}

// drain receives until the stream ends; its status code.
func (c *recvCounter[T]) drain() error {
	for {
		if _, err := c.Recv(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// TestMetrics makes many concurrent calls of every kind the service
// answers, some of them failing, and checks that the scraped metrics
// count exactly what the client saw: calls by method and status code,
// latency observations, bytes of the messages sent, the batches and rows
// DoGet sent, nothing left in flight.
func TestMetrics(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	st := testStore(t)
	reg := prometheus.NewRegistry()
	// PieceBytes 1: an endpoint per row group, 20 of them.
	addr := startServer(t, []Root{{Store: st}}, ServerOptions{Token: "s3cret", Mem: mem, PieceBytes: 1, Metrics: reg})
	metricsURL := metricstest.Serve(t, reg)
	good, err := Dial(addr, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	anon, err := Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer anon.Close()

	type call struct {
		method string
		code   codes.Code
	}
	var (
		mu          sync.Mutex
		calls       = map[call]int{}
		sent        = map[string]int64{}
		batches     int
		rows        int64
		taxi        = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"dataset":"taxi/"}`)}
		missing     = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"dataset":"nope/"}`)}
		notJSON     = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"dataset":`)}
		ctx         = context.Background()
		recordUnary = func(method string, resp proto.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			calls[call{method, status.Code(err)}]++
			if err == nil {
				sent[method] += int64(proto.Size(resp))
			}
		}
	)
	info, err := good.GetFlightInfo(ctx, taxi)
	recordUnary("GetFlightInfo", info, err)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 20 {
		t.Fatalf("%d endpoints, want 20", len(info.Endpoint))
	}
	// doGet fetches a ticket's batches, counting what arrived.
	doGet := func(tk *flight.Ticket) (codes.Code, error) {
		stream, err := good.DoGet(ctx, tk)
		if err != nil {
			return 0, err
		}
		c := &recvCounter[*flight.FlightData]{recv: stream.Recv}
		var nb int
		var nr int64
		r, err := flight.NewRecordReader(c, ipc.WithAllocator(mem))
		if err == nil {
			for r.Next() {
				nb++
				nr += r.RecordBatch().NumRows()
			}
			err = r.Err()
			r.Release()
		}
		mu.Lock()
		defer mu.Unlock()
		calls[call{"DoGet", status.Code(err)}]++
		sent["DoGet"] += c.n
		batches += nb
		rows += nr
		return status.Code(err), nil
	}

	kinds := []struct {
		code codes.Code
		call func(g, i int) (codes.Code, error)
	}{
		{codes.OK, func(g, i int) (codes.Code, error) {
			info, err := good.GetFlightInfo(ctx, taxi)
			recordUnary("GetFlightInfo", info, err)
			return status.Code(err), nil
		}},
		{codes.OK, func(g, i int) (codes.Code, error) { return doGet(info.Endpoint[(g*7+i)%len(info.Endpoint)].Ticket) }},
		{codes.OK, func(g, i int) (codes.Code, error) {
			sc, err := good.GetSchema(ctx, taxi)
			recordUnary("GetSchema", sc, err)
			return status.Code(err), nil
		}},
		{codes.OK, func(g, i int) (codes.Code, error) {
			ls, err := good.ListFlights(ctx, &flight.Criteria{})
			if err != nil {
				return 0, err
			}
			c := &recvCounter[*flight.FlightInfo]{recv: ls.Recv}
			err = c.drain()
			if err == nil && c.msgs != 2 {
				return 0, fmt.Errorf("ListFlights: %d flights, want 2", c.msgs)
			}
			mu.Lock()
			defer mu.Unlock()
			calls[call{"ListFlights", status.Code(err)}]++
			sent["ListFlights"] += c.n
			return status.Code(err), nil
		}},
		{codes.NotFound, func(g, i int) (codes.Code, error) {
			_, err := good.GetFlightInfo(ctx, missing)
			recordUnary("GetFlightInfo", nil, err)
			return status.Code(err), nil
		}},
		{codes.InvalidArgument, func(g, i int) (codes.Code, error) {
			_, err := good.GetSchema(ctx, notJSON)
			recordUnary("GetSchema", nil, err)
			return status.Code(err), nil
		}},
		{codes.Unauthenticated, func(g, i int) (codes.Code, error) {
			_, err := anon.GetFlightInfo(ctx, taxi)
			recordUnary("GetFlightInfo", nil, err)
			return status.Code(err), nil
		}},
		{codes.InvalidArgument, func(g, i int) (codes.Code, error) {
			return doGet(&flight.Ticket{Ticket: []byte("not a ticket")})
		}},
		{codes.Unimplemented, func(g, i int) (codes.Code, error) {
			s, err := good.DoAction(ctx, &flight.Action{Type: "anything"})
			if err != nil {
				return 0, err
			}
			c := &recvCounter[*flight.Result]{recv: s.Recv}
			err = c.drain()
			mu.Lock()
			defer mu.Unlock()
			calls[call{"DoAction", status.Code(err)}]++
			sent["DoAction"] += c.n
			return status.Code(err), nil
		}},
	}
	const goroutines, perGoroutine = 8, 45
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				k := kinds[(g+i)%len(kinds)]
				code, err := k.call(g, i)
				if err == nil && code != k.code {
					err = fmt.Errorf("kind %d: code %v, want %v", (g+i)%len(kinds), code, k.code)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for _, n := range calls {
		total += n
	}
	if total != 1+goroutines*perGoroutine {
		t.Fatalf("%d calls recorded, made %d", total, 1+goroutines*perGoroutine)
	}

	m := metricstest.Settled(t, metricsURL, "sluice_flight_calls_in_flight", "sluice_flight_calls_total", total)
	perMethod := map[string]int{}
	for c, n := range calls {
		perMethod[c.method] += n
		if v := m.Get(t, "sluice_flight_calls_total", "method", c.method, "code", c.code.String()); v != float64(n) {
			t.Errorf("calls %s %v: %v, made %d", c.method, c.code, v, n)
		}
	}
	if n := len(m.Series("sluice_flight_calls_total")); n != len(calls) {
		t.Errorf("%d series of calls, want %d: %v", n, len(calls), m.Series("sluice_flight_calls_total"))
	}
	for method, n := range perMethod {
		if v := m.Get(t, "sluice_flight_call_duration_seconds_count", "method", method); v != float64(n) {
			t.Errorf("latency observations of %s: %v, want %d", method, v, n)
		}
		if v := m.Get(t, "sluice_flight_sent_bytes_total", "method", method); v != float64(sent[method]) {
			t.Errorf("bytes %s sent: %v, the client got %d", method, v, sent[method])
		}
	}
	if v := m.Get(t, "sluice_flight_sent_batches_total"); v != float64(batches) || batches == 0 {
		t.Errorf("batches sent: %v, the client got %d", v, batches)
	}
	if v := m.Get(t, "sluice_flight_sent_rows_total"); v != float64(rows) || rows == 0 {
		t.Errorf("rows sent: %v, the client got %d", v, rows)
	}
	// Methods never called are there, at zero.
	if v := m.Get(t, "sluice_flight_call_duration_seconds_count", "method", "DoPut"); v != 0 {
		t.Errorf("DoPut observed %v times", v)
	}
	t.Logf("%d calls, %d method/code pairs, %d batches, %d rows, DoGet sent %d bytes", total, len(calls), batches, rows, sent["DoGet"])
}

// TestMetricsRegistryTaken: a second server cannot register on a
// registry the first one uses.
func TestMetricsRegistryTaken(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewServer(nil, ServerOptions{Metrics: reg}).Shutdown(0)
	defer func() {
		if r := recover(); r == nil {
			t.Error("a second server registered on the same registry")
		} else if err, ok := r.(error); !ok || !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			t.Errorf("panic %v, want an AlreadyRegisteredError", r)
		}
	}()
	NewServer(nil, ServerOptions{Metrics: reg})
}
