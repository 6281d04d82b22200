package flightsvc

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// ServerOptions configure NewServer.
type ServerOptions struct {
	// Token, when set, is the bearer token every call must carry
	// ("authorization: Bearer <token>"). Empty means no authentication:
	// only for a service bound to loopback.
	Token string
	// Mem allocates the batches (nil: memory.DefaultAllocator).
	Mem memory.Allocator
	// Memory is each stream's scan budget (scan.Options.Memory).
	// Default 64 MiB.
	Memory int64
	// Concurrency is how many row groups one stream decodes at once (an
	// ordered stream delivers them in order, scan holding at most that
	// many ahead of the one due; clients fetch endpoints in parallel).
	// Default 2.
	Concurrency int
	// PieceBytes is the size GetFlightInfo cuts a file's row groups into
	// endpoints by, in column-chunk bytes the request reads: a file of
	// at least twice as much is cut into contiguous row group ranges of
	// PieceBytes to twice as much (never splitting a row group), so a
	// dataset of a few large files still gives clients endpoints to fetch
	// in parallel; a smaller file is one endpoint. Default 64 MiB.
	PieceBytes int64
	// Catalog, when set, is an Iceberg REST catalog's URI (see
	// iceberg.Catalog; its credentials from the environment,
	// iceberg.CatalogFromEnv): a dataset named NAMESPACE.TABLE that no
	// root holds is that table of the catalog, served when its metadata
	// file is under a root (the service reads nothing outside them).
	Catalog string
	// Metrics, when set, gets the service's Prometheus collectors (calls
	// by method and gRPC status code, their latency, calls in flight,
	// bytes, batches and rows sent; see metrics.go). NewServer panics if
	// they cannot be registered, as on a registry another Server uses.
	Metrics prometheus.Registerer
}

// Root is a store and the prefix in it whose datasets a Server serves.
type Root struct {
	Store  *store.Store
	Prefix string // "" or ending in "/"
}

// Server is an Arrow Flight service over the Parquet datasets and Iceberg
// tables under its roots: ListFlights lists them, GetFlightInfo plans a
// Request (one endpoint per piece of work: a file, a range of row groups
// of a large one, or a table's data file; FlightInfo.ordered as
// requested), DoGet streams an endpoint's batches with their collect.Pos
// (collect.MarshalPos) as app_metadata, and GetSchema answers a request's
// schema.
type Server struct {
	flight.BaseFlightServer
	roots    []Root
	fetchers []*fetch.Fetcher
	opts     ServerOptions
	grpc     *grpc.Server
	metrics  *metrics // nil without ServerOptions.Metrics
}

// NewServer makes a service over roots; Serve starts it.
func NewServer(roots []Root, opts ServerOptions) *Server {
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	if opts.Memory <= 0 {
		opts.Memory = 64 << 20
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 2
	}
	if opts.PieceBytes <= 0 {
		opts.PieceBytes = 64 << 20
	}
	s := &Server{roots: roots, opts: opts}
	for i, r := range roots {
		if r.Prefix != "" && !strings.HasSuffix(r.Prefix, "/") {
			s.roots[i].Prefix += "/"
		}
		// One fetcher per root: what it learns of the link carries over
		// from stream to stream.
		s.fetchers = append(s.fetchers, fetch.New(r.Store, fetch.Options{Memory: opts.Memory}))
	}
	var gopts []grpc.ServerOption
	if opts.Metrics != nil {
		// First: the outermost, so that refused calls count too.
		s.metrics = newMetrics(opts.Metrics)
		gopts = append(gopts, grpc.ChainUnaryInterceptor(s.metrics.unary), grpc.ChainStreamInterceptor(s.metrics.stream))
	}
	if opts.Token != "" {
		gopts = append(gopts, grpc.ChainUnaryInterceptor(s.authUnary), grpc.ChainStreamInterceptor(s.authStream))
	}
	s.grpc = grpc.NewServer(gopts...)
	flight.RegisterFlightServiceServer(s.grpc, s)
	if s.metrics != nil {
		s.metrics.known(s.grpc)
	}
	return s
}

// Serve answers calls on lis until Shutdown.
func (s *Server) Serve(lis net.Listener) error {
	return s.grpc.Serve(lis)
}

// Shutdown stops the service: no new calls; the calls in progress get
// grace to finish, then are cancelled (their scans stop with them).
func (s *Server) Shutdown(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		s.grpc.Stop()
		<-done
	}
}

// ServeContext answers calls on lis until ctx is done, then shuts down
// (Shutdown with grace) and returns nil; or until serving fails, and
// returns why.
func (s *Server) ServeContext(ctx context.Context, lis net.Listener, grace time.Duration) error {
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	select {
	case <-ctx.Done():
		s.Shutdown(grace)
		<-served
		return nil
	case err := <-served:
		return err
	}
}

// NewToken is a bearer token no one can guess (128 random bits, in hex),
// for a service reachable from other machines that was given none.
func NewToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// CheckRoot fails with an error matching store.ErrNotFound when no object
// is under prefix in st: serving an empty root is almost always a
// mistyped path.
func CheckRoot(ctx context.Context, st *store.Store, prefix string) error {
	found := errors.New("found")
	err := st.Walk(ctx, prefix, func(store.ObjectInfo) error { return found })
	switch {
	case err == found:
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("serve %s: %w: nothing there to serve", st.URL(prefix), store.ErrNotFound)
}

func (s *Server) authorized(ctx context.Context) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
		tok, ok := strings.CutPrefix(v, "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1 {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "a bearer token is required (authorization: Bearer <token>)")
}

func (s *Server) authUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if err := s.authorized(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if err := s.authorized(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

// grpcError gives an error the status code a client can act on.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var ee *expr.Error
	var ce *expr.ColumnError
	var ne *scan.NoFilesError
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.As(err, &ne), store.KindOf(err) == store.KindNotFound:
		return status.Error(codes.NotFound, err.Error())
	case errors.As(err, &ee), errors.As(err, &ce), store.KindOf(err) == store.KindInvalid,
		errors.Is(err, exec.ErrInvalid), errors.Is(err, iceberg.ErrInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	case store.KindOf(err) == store.KindPermission:
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// open opens a request's dataset under the first root that has it: its
// Parquet files, or the Iceberg table whose location or metadata file it
// names.
func (s *Server) open(ctx context.Context, r Request) (served, error) {
	var first error
	for i, root := range s.roots {
		if iceberg.IsMetadataURL(r.Dataset) {
			t, err := s.openTable(ctx, root.Store.URL(root.Prefix+r.Dataset), r)
			if store.KindOf(err) == store.KindNotFound {
				if first == nil {
					first = err
				}
				continue
			}
			return t, err
		}
		ds, err := scan.Open(ctx, root.Store, root.Prefix+r.Dataset, s.scanOptions(i, r.Columns, r.Filter, r.Ordered))
		var ne *scan.NoFilesError
		var it *scan.IcebergTableError
		switch {
		case errors.As(err, &ne):
			if first == nil {
				first = err
			}
			continue
		case errors.As(err, &it):
			// At the metadata file the listing found, else as the
			// table's location.
			return s.openTable(ctx, cmp.Or(it.Metadata, it.URL), r)
		}
		return served{root: i, ds: ds}, err
	}
	if s.opts.Catalog != "" && store.KindOf(first) == store.KindNotFound &&
		strings.Contains(r.Dataset, ".") && !strings.Contains(r.Dataset, "/") {
		// Pinned by the metadata file the catalog names: every endpoint
		// reads that snapshot, with no call to the catalog.
		return s.openTable(ctx, r.Dataset, r)
	}
	if first == nil {
		first = fmt.Errorf("no roots")
	}
	return served{}, first
}

func (s *Server) scanOptions(root int, columns []string, filter string, ordered bool) scan.Options {
	// An ordered endpoint's batches come out of scan in dataset order,
	// holding at most Concurrency row groups ahead of the one due.
	return scan.Options{Columns: columns, Filter: filter, Mem: s.opts.Mem, Fetcher: s.fetchers[root], Concurrency: s.opts.Concurrency, Ordered: ordered}
}

// schemaHash names a schema's fields in a ticket (the schema's own
// metadata comes from one file and may differ between files).
func schemaHash(sc *arrow.Schema) string {
	h := fnv.New64a()
	h.Write(flight.SerializeSchema(arrow.NewSchema(sc.Fields(), nil), memory.DefaultAllocator))
	return strconv.FormatUint(h.Sum64(), 16)
}

// GetFlightInfo plans a request: one endpoint per piece of work with
// something to read (see ServerOptions.PieceBytes), in dataset order.
func (s *Server) GetFlightInfo(ctx context.Context, d *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	r, err := ParseDescriptor(d)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	d0, err := s.open(ctx, r)
	if err != nil {
		return nil, grpcError(err)
	}
	if d0.table != nil {
		return s.tableInfo(d, r, d0), nil
	}
	root, ds := d0.root, d0.ds
	sc := ds.Schema()
	hash := schemaHash(sc)
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(sc, s.opts.Mem),
		FlightDescriptor: d,
		Ordered:          r.Ordered,
		TotalBytes:       ds.BytesNeeded(),
		TotalRecords:     -1,
	}
	files := ds.Files()
	var rows int64
	for _, f := range files {
		if !f.Pruned {
			rows += f.Rows
		}
	}
	for _, p := range scan.Pieces(ds.Plan(), s.opts.PieceBytes) {
		t := ticket{V: ticketVersion, Root: root, Dataset: r.Dataset, Columns: r.Columns, Filter: r.Filter,
			Ordered: r.Ordered, Part: len(info.Endpoint), File: p.File, Key: files[p.File].Key, Lo: p.Lo, Hi: p.Hi, Schema: hash}
		info.Endpoint = append(info.Endpoint, &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: t.encode()}})
	}
	if r.Filter == "" {
		info.TotalRecords = rows
	}
	return info, nil
}

// GetSchema answers a request's schema without planning it.
func (s *Server) GetSchema(ctx context.Context, d *flight.FlightDescriptor) (*flight.SchemaResult, error) {
	r, err := ParseDescriptor(d)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	ds, err := s.open(ctx, r)
	if err != nil {
		return nil, grpcError(err)
	}
	return &flight.SchemaResult{Schema: flight.SerializeSchema(ds.schema(), s.opts.Mem)}, nil
}

// ListFlights lists the datasets under the roots: each directory right
// below a root with Parquet files under it, and each Parquet file right
// in a root. A non-empty criteria expression keeps the names starting
// with it.
func (s *Server) ListFlights(c *flight.Criteria, stream flight.FlightService_ListFlightsServer) error {
	ctx := stream.Context()
	want := ""
	if c != nil {
		want = string(c.Expression)
	}
	seen := map[string]bool{}
	for _, root := range s.roots {
		names, err := datasetNames(ctx, root)
		if err != nil {
			return grpcError(err)
		}
		for _, name := range names {
			if seen[name] || !strings.HasPrefix(name, want) {
				continue
			}
			seen[name] = true
			r := Request{Dataset: name, Ordered: true}
			ds, err := s.open(ctx, r)
			if err != nil {
				return grpcError(err)
			}
			var info *flight.FlightInfo
			if ds.table != nil {
				info = s.tableInfo(r.Descriptor(), r, ds)
				info.Endpoint = nil
			} else {
				var rows int64
				for _, f := range ds.ds.Files() {
					rows += f.Rows
				}
				info = &flight.FlightInfo{
					Schema:           flight.SerializeSchema(ds.ds.Schema(), s.opts.Mem),
					FlightDescriptor: r.Descriptor(),
					Ordered:          true,
					TotalRecords:     rows,
					TotalBytes:       ds.ds.BytesNeeded(),
				}
			}
			if err := stream.Send(info); err != nil {
				return err
			}
		}
	}
	return nil
}

// datasetNames lists a root's datasets (see ListFlights), in key order.
// An Iceberg table (a directory with metadata/*.metadata.json or
// metadata/version-hint.text) is one dataset at any depth, named by its
// directory; its Parquet files are its own, not another dataset's.
func datasetNames(ctx context.Context, root Root) ([]string, error) {
	var objs []store.ObjectInfo
	err := root.Store.Walk(ctx, root.Prefix, func(o store.ObjectInfo) error {
		objs = append(objs, o)
		return nil
	})
	set := map[string]bool{}
	var tables []string
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, root.Prefix)
		dir, name, ok := strings.Cut(rel, "metadata/")
		if ok && (dir == "" || strings.HasSuffix(dir, "/")) && !strings.Contains(name, "/") &&
			(name == "version-hint.text" || strings.HasSuffix(name, ".metadata.json")) && !slices.Contains(tables, dir) {
			tables = append(tables, dir)
			// A root that is a table itself has no name under it.
			set[dir] = dir != ""
		}
	}
objects:
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, root.Prefix)
		if !strings.HasSuffix(rel, ".parquet") || slices.ContainsFunc(tables, func(t string) bool { return strings.HasPrefix(rel, t) }) {
			continue
		}
		for _, el := range strings.Split(rel, "/") {
			if strings.HasPrefix(el, "_") || strings.HasPrefix(el, ".") {
				continue objects
			}
		}
		if dir, _, ok := strings.Cut(rel, "/"); ok {
			set[dir+"/"] = true
		} else {
			set[rel] = true
		}
	}
	names := make([]string, 0, len(set))
	for n, ok := range set {
		if ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names, err
}

// DoGet streams one endpoint: the batches of one piece of the request
// (row groups of one file), each with its Pos as app_metadata: the
// position in the whole dataset, so that clients restore dataset order
// by it whatever the pieces. An error while streaming ends the
// call with that error, so the client never takes a short stream for a
// whole one. A client that goes away cancels the call's context, which
// stops the scan.
func (s *Server) DoGet(tk *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	ctx := stream.Context()
	t, err := parseTicket(tk.GetTicket())
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if t.Root < 0 || t.Root >= len(s.roots) {
		return status.Errorf(codes.InvalidArgument, "ticket names root %d of %d", t.Root, len(s.roots))
	}
	if t.Table != "" {
		return s.doGetTable(ctx, t, stream)
	}
	root := s.roots[t.Root]
	// The piece's file alone, with the dataset's partition root: one
	// footer read, and the same columns and batches as the whole
	// dataset's scan gives for these row groups.
	pattern, err := scan.PiecePattern(root.Prefix, t.Dataset, t.Key)
	if err != nil {
		return grpcError(fmt.Errorf("ticket %w", err))
	}
	so := s.scanOptions(t.Root, t.Columns, t.Filter, t.Ordered)
	so.RowGroups = func(key string, rg int) bool { return key == t.Key && rg >= t.Lo && rg < t.Hi }
	ds, err := scan.Open(ctx, root.Store, pattern, so)
	if err != nil {
		return grpcError(err)
	}
	// scan reads nothing of row groups the file does not have; a ticket
	// asking for them is wrong (or the file changed since the plan).
	if n := ds.Files()[0].RowGroups; t.Hi > n {
		return status.Errorf(codes.InvalidArgument, "ticket asks for row groups [%d, %d) of %s, which has %d",
			t.Lo, t.Hi, root.Store.URL(t.Key), n)
	}
	if h := schemaHash(ds.Schema()); h != t.Schema {
		return status.Errorf(codes.FailedPrecondition, "%s: its schema %v differs from the dataset's (changed since the flight was planned?)",
			root.Store.URL(t.Key), ds.Schema())
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(ds.Schema()), ipc.WithAllocator(s.opts.Mem))
	sc := ds.Scan(ctx)
	defer sc.Close()
	for sc.Next() {
		b := sc.Batch()
		// The piece's scan sees one file; the position is the whole
		// dataset's.
		b.Pos.File, b.Pos.Key = t.File, t.Key
		err = w.WriteWithAppMetadata(b.RecordBatch, collect.MarshalPos(collect.Pos{Part: t.Part, Position: b.Pos}))
		rows := b.NumRows()
		b.Release()
		if err != nil {
			return grpcError(err)
		}
		s.metrics.batch(rows)
	}
	if err = sc.Err(); err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return grpcError(err)
	}
	return w.Close()
}
