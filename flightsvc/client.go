package flightsvc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/internal/ipccheck"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// GetOptions configure Get.
type GetOptions struct {
	// Columns, Filter: see Request.
	Columns []string
	Filter  string
	// Order is the order the stream delivers in. Dataset asks the service
	// for ordered endpoints (each streamed in dataset order) and reorders
	// across them; Arrival lets the service stream each endpoint as it
	// decodes. Either way every batch carries its Pos, so an Arrow IPC file Sink
	// fed in arrival order writes a dataset-order file.
	Order collect.Order
	// Parallel is how many endpoints are fetched at once (default
	// GOMAXPROCS); Window and WindowBytes bound the reorder window (see
	// Options).
	Parallel    int
	Window      int
	WindowBytes int64
	// Token is the bearer token the service wants, if any.
	Token string
	// Mem allocates the batches (nil: memory.DefaultAllocator).
	Mem memory.Allocator
}

// Remote is a dataset being fetched from a Flight service: its schema,
// the FlightInfo it was planned as, and the stream of its batches. Close
// it when done (that also closes the connection).
type Remote struct {
	*collect.Stream
	Schema *arrow.Schema
	Info   *flight.FlightInfo
	client flight.Client
}

// Close stops the fetches, releases what they queued and closes the
// connection.
func (r *Remote) Close() {
	r.Stream.Close()
	_ = r.client.Close()
}

// Dial connects to a Flight service at addr (host:port, or a grpc:// URL)
// without TLS: sluice's service is meant for loopback or a trusted
// network. An address without a port matches ErrInvalid: gRPC would
// quietly take 443.
func Dial(addr, token string) (flight.Client, error) {
	addr = strings.TrimPrefix(addr, "grpc://")
	addr = strings.TrimPrefix(addr, "grpc+tcp://")
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return nil, invalidf("no port in %q: want a grpc://HOST:PORT address (sluice serve-flight prints it; its default port is 8815)", addr)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// A batch is one message; batches of tens of MiB are ordinary.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)),
	}
	if token != "" {
		bearer := "Bearer " + token
		opts = append(opts,
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, o ...grpc.CallOption) error {
				return inv(metadata.AppendToOutgoingContext(ctx, "authorization", bearer), method, req, reply, cc, o...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, st grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
				return st(metadata.AppendToOutgoingContext(ctx, "authorization", bearer), desc, cc, method, o...)
			}))
	}
	return flight.NewClientWithMiddleware(addr, nil, nil, opts...)
}

// Get plans dataset on the Flight service at addr and fetches all its
// endpoints, opts.Parallel at a time, into one stream.
func Get(ctx context.Context, addr, dataset string, opts GetOptions) (*Remote, error) {
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	client, err := Dial(addr, opts.Token)
	if err != nil {
		return nil, fmt.Errorf("flight %s: %w", addr, err)
	}
	req := Request{Dataset: dataset, Columns: opts.Columns, Filter: opts.Filter, Ordered: opts.Order == collect.Dataset}
	info, err := client.GetFlightInfo(ctx, req.Descriptor())
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("flight %s: %s: %w", addr, dataset, err)
	}
	schema, err := flight.DeserializeSchema(info.GetSchema(), opts.Mem)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("flight %s: %s: schema: %w", addr, dataset, err)
	}
	if opts.Order == collect.Dataset && !info.GetOrdered() {
		_ = client.Close()
		return nil, fmt.Errorf("flight %s: %s: the service does not keep the endpoints in order", addr, dataset)
	}
	eps := info.GetEndpoint()
	produce := func(ctx context.Context, part int, emit func(scan.Batch) error) error {
		return fetchEndpoint(ctx, client, eps[part], schema, opts.Mem, emit)
	}
	s := collect.Collect(ctx, len(eps), produce, collect.Options{Order: opts.Order, Parallel: opts.Parallel, Window: opts.Window, WindowBytes: opts.WindowBytes})
	return &Remote{Stream: s, Schema: schema, Info: info, client: client}, nil
}

// fetchEndpoint streams one endpoint's batches to emit. A batch without
// app_metadata (another service) is numbered in the order it came.
func fetchEndpoint(ctx context.Context, client flight.Client, ep *flight.FlightEndpoint, schema *arrow.Schema, mem memory.Allocator, emit func(scan.Batch) error) error {
	if len(ep.GetLocation()) > 0 {
		// sluice's service redeems its tickets itself; another location
		// would need a connection of its own.
		loc := ep.GetLocation()[0].GetUri()
		if !strings.HasPrefix(loc, "arrow-flight-reuse-connection:") {
			return fmt.Errorf("endpoint at %s: fetching from another location is not supported", loc)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the call if we stop early
	st, err := client.DoGet(ctx, ep.GetTicket())
	if err != nil {
		return err
	}
	r, err := flight.NewRecordReader(checkedStream{st}, ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	defer r.Release()
	if !r.Schema().Equal(schema) {
		return fmt.Errorf("endpoint streams schema %v, the flight announced %v", r.Schema(), schema)
	}
	for seq := 0; r.Next(); seq++ {
		rec := r.RecordBatch()
		if err := ipccheck.Batch(rec); err != nil {
			return err
		}
		pos := collect.Pos{Position: scan.Position{Batch: seq}}
		if md := r.LatestAppMetadata(); len(md) > 0 {
			if pos, err = collect.UnmarshalPos(md); err != nil {
				return err
			}
		}
		rec.Retain()
		if err := emit(scan.Batch{RecordBatch: rec, Pos: pos.Position}); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	return nil
}

// checkedStream refuses a message whose metadata would make arrow-go
// allocate or slice beyond what arrived, before arrow-go reads it.
type checkedStream struct{ flight.DataStreamReader }

func (c checkedStream) Recv() (*flight.FlightData, error) {
	fd, err := c.DataStreamReader.Recv()
	if err == nil && len(fd.DataHeader) > 0 {
		if err := ipccheck.Message(fd.DataHeader, int64(len(fd.DataBody))); err != nil {
			return nil, err
		}
	}
	return fd, err
}

// IsUnauthenticated reports whether err is the service refusing a call
// for want of the right token.
func IsUnauthenticated(err error) bool {
	return status.Code(err) == codes.Unauthenticated
}

// ClientError classifies an error of Get or of its stream, from the
// service at addr, as the same refusal by a store would be (the reverse
// of what the server does with a store's errors): NotFound wraps
// store.ErrNotFound, PermissionDenied and Unauthenticated wrap
// store.ErrPermission, and an unreachable service says so in words
// rather than in gRPC's layers of its cause. Other errors, InvalidArgument
// among them, are returned as they are.
func ClientError(addr string, err error) error {
	switch status.Code(err) {
	case codes.Unavailable:
		// The innermost cause ("connection refused").
		msg := err.Error()
		var gs interface{ GRPCStatus() *status.Status }
		if errors.As(err, &gs) {
			msg = gs.GRPCStatus().Message()
		}
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = strings.Trim(msg[i+2:], `"`)
		}
		return fmt.Errorf("the Flight service at %s is unreachable: %s (is sluice serve-flight running there?)", addr, msg)
	case codes.NotFound:
		return fmt.Errorf("%w: %v", store.ErrNotFound, err)
	case codes.PermissionDenied, codes.Unauthenticated:
		return fmt.Errorf("%w: %v", store.ErrPermission, err)
	}
	return err
}
