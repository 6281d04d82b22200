package flightsvc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// testStore is a mem:// store holding a small taxi dataset ("taxi/", 4
// files of 5 row groups) and a partitioned one ("hive/year=…/").
func testStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, _, err := store.Open(ctx, "mem://"+strings.NewReplacer("/", "-", "=", "-").Replace(t.Name())+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Taxi(ctx, st, "taxi/", gen.Options{Rows: 20000, Files: 4, RowGroupRows: 1000, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	for i, y := range []string{"2020", "2021"} {
		if _, err := gen.Taxi(ctx, st, "hive/year="+y+"/", gen.Options{Rows: 3000, Files: 2, RowGroupRows: 1000, Seed: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// startServer serves roots on a loopback port until the test ends.
func startServer(t *testing.T, roots []Root, opts ServerOptions) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(roots, opts)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Shutdown(time.Second)
		<-done
	})
	return lis.Addr().String()
}

// localScan scans a dataset in-process; it returns the checksum of its
// rows and its batches' positions, both in dataset order.
func localScan(t *testing.T, st *store.Store, pattern string, opts scan.Options) (arrowtest.Checksum, []scan.Position) {
	t.Helper()
	ds, err := scan.Open(context.Background(), st, pattern, opts)
	if err != nil {
		t.Fatal(err)
	}
	sc := ds.Scan(context.Background())
	defer sc.Close()
	var bs []scan.Batch
	for sc.Next() {
		bs = append(bs, sc.Batch())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(bs, func(a, b scan.Batch) int { return collect.Pos{Position: a.Pos}.Compare(collect.Pos{Position: b.Pos}) })
	var c arrowtest.Checksum
	var pos []scan.Position
	for _, b := range bs {
		c.Add(b.RecordBatch)
		pos = append(pos, b.Pos)
		b.Release()
	}
	return c, pos
}

// TestServeAndGet fetches datasets from the service with both orders
// and every output format and checks they hold what a local scan reads.
func TestServeAndGet(t *testing.T) {
	st := testStore(t)
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	addr := startServer(t, []Root{{Store: st}}, ServerOptions{Mem: mem})
	cases := []struct {
		dataset string
		columns []string
		filter  string
	}{
		{"taxi/", nil, ""},
		{"taxi", []string{"fare_amount", "passenger_count"}, ""},
		{"taxi/", []string{"trip_distance"}, "trip_distance > 5"},
		{"hive/", nil, ""},
		{"hive/", []string{"year", "fare_amount"}, "year = 2021"},
		{"taxi/part-0000[13].parquet", nil, ""},
		{"taxi/", nil, "fare_amount < -1"}, // nothing matches: empty but valid
	}
	for _, c := range cases {
		want, _ := localScan(t, st, c.dataset, scan.Options{Columns: c.columns, Filter: c.filter})
		for _, order := range []collect.Order{collect.Arrival, collect.Dataset} {
			for _, f := range []format.Format{format.IPCFile, format.IPCStream, format.Parquet} {
				if order == collect.Arrival && f != format.IPCFile {
					continue // only the IPC file restores dataset order by itself
				}
				t.Run(fmt.Sprintf("%s/%v/%v/%v", c.dataset, c.columns, order, f), func(t *testing.T) {
					cmem := memory.NewCheckedAllocator(memory.NewGoAllocator())
					defer cmem.AssertSize(t, 0)
					out, _, err := getInto(t, addr, c.dataset, GetOptions{Columns: c.columns, Filter: c.filter, Order: order, Parallel: 3, Mem: cmem}, f)
					if err != nil {
						t.Fatal(err)
					}
					if got := arrowtest.ReadChecksum(t, out, f.Name()); got != want {
						t.Fatalf("fetched %v, local scan %v", got, want)
					}
				})
			}
		}
	}
}

// getInto fetches a dataset with Get and writes it in format f; it
// returns the output, how many endpoints the flight had, and the error of
// writing the stream (a failed Get fails the test).
func getInto(t *testing.T, addr, dataset string, opts GetOptions, f format.Format) ([]byte, int, error) {
	t.Helper()
	r, err := Get(context.Background(), addr, dataset, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out bytes.Buffer
	sink, err := collect.NewSink(&out, f, r.Schema, opts.Mem)
	if err != nil {
		t.Fatal(err)
	}
	err = collect.WriteStream(r.Stream, sink)
	return out.Bytes(), len(r.Info.Endpoint), err
}

// TestFlightClientParallelDoGet is a plain arrow-go Flight client (no
// sluice client code): GetFlightInfo, then every endpoint's DoGet at once,
// batches put in order by their app_metadata.
func TestFlightClientParallelDoGet(t *testing.T) {
	st := testStore(t)
	addr := startServer(t, []Root{{Store: st}}, ServerOptions{})
	want, _ := localScan(t, st, "taxi/", scan.Options{})
	client, err := Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	info, err := client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"dataset":"taxi/"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Endpoint) != 4 || info.TotalRecords != 20000 {
		t.Fatalf("%d endpoints, %d records; want 4, 20000", len(info.Endpoint), info.TotalRecords)
	}
	items := doGets(t, client, info)
	slices.SortFunc(items, func(a, b arrowtest.Got[fetched]) int { return a.Key.pos.Compare(b.Key.pos) })
	var got arrowtest.Checksum
	for _, it := range items {
		got.Add(it.Rec)
		it.Rec.Release()
	}
	if got != want {
		t.Fatalf("parallel DoGets %v, local scan %v", got, want)
	}
}

// TestListFlights lists the datasets under the root.
func TestListFlights(t *testing.T) {
	st := testStore(t)
	addr := startServer(t, []Root{{Store: st}}, ServerOptions{})
	client, err := Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var names []string
	for r, info := range listFlights(t, client) {
		names = append(names, fmt.Sprintf("%s:%d", r.Dataset, info.TotalRecords))
	}
	if want := []string{"hive/:6000", "taxi/:20000"}; !slices.Equal(names, want) {
		t.Fatalf("ListFlights: %v, want %v", names, want)
	}
}

// listFlights is every flight the server lists, with its request.
func listFlights(t *testing.T, client flight.Client) iter.Seq2[Request, *flight.FlightInfo] {
	t.Helper()
	ls, err := client.ListFlights(context.Background(), &flight.Criteria{})
	if err != nil {
		t.Fatal(err)
	}
	return func(yield func(Request, *flight.FlightInfo) bool) {
		for {
			info, err := ls.Recv()
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, err := ParseDescriptor(info.FlightDescriptor)
			if err != nil {
				t.Fatal(err)
			}
			if !yield(r, info) {
				return
			}
		}
	}
}

// TestToken: with a token, calls without it (or with another) are refused.
func TestToken(t *testing.T) {
	st := testStore(t)
	addr := startServer(t, []Root{{Store: st}}, ServerOptions{Token: "s3cret"})
	for _, tok := range []string{"", "wrong"} {
		_, err := Get(context.Background(), addr, "taxi/", GetOptions{Token: tok})
		if !IsUnauthenticated(err) {
			t.Errorf("token %q: err = %v, want Unauthenticated", tok, err)
		}
	}
	r, err := Get(context.Background(), addr, "taxi/", GetOptions{Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	err = collect.Drain(r.Stream, func(collect.Batch) error { return nil })
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
}

// failingDriver fails data reads (not footer reads) of one object. A
// footer read that would bring the data with it (scan reads a small file
// whole with its footer) gets the footer's 64 KiB alone, so the data is
// read, and fails, while the stream is under way.
type failingDriver struct {
	store.Driver
	key string
}

var errDisk = errors.New("injected read failure")

func (d failingDriver) ReadRange(ctx context.Context, key string, r store.Range, o store.ReadOptions) (io.ReadCloser, store.ObjectInfo, error) {
	if key == d.key && r.Off >= 0 {
		return nil, store.ObjectInfo{}, errDisk
	}
	if key == d.key && -r.Off > 64<<10 {
		r = store.Suffix(64 << 10)
	}
	return d.Driver.ReadRange(ctx, key, r, o)
}

// TestGetErrors: an error in any endpoint reaches the client as an error,
// whatever the order; unknown datasets and bad requests are clean errors.
func TestGetErrors(t *testing.T) {
	st := testStore(t)
	bad := store.New(failingDriver{st.Driver(), "taxi/part-00002.parquet"}, "mem://bad/")
	addr := startServer(t, []Root{{Store: bad}}, ServerOptions{})
	for _, order := range []collect.Order{collect.Arrival, collect.Dataset} {
		cmem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		out, _, err := getInto(t, addr, "taxi/", GetOptions{Order: order, Parallel: 2, Mem: cmem}, format.IPCFile)
		if err == nil || !strings.Contains(err.Error(), errDisk.Error()) {
			t.Errorf("%v: err = %v, want the injected read failure", order, err)
		}
		if _, rerr := ipc.NewFileReader(bytes.NewReader(out)); rerr == nil {
			t.Errorf("%v: the failed fetch left a valid IPC file", order)
		}
		cmem.AssertSize(t, 0)
	}
	for _, c := range []struct {
		dataset, filter string
		code            codes.Code
	}{
		{"nosuch/", "", codes.NotFound},
		{"taxi/", "fare_amount >", codes.InvalidArgument},
		{"taxi/", "nosuchcolumn = 1", codes.InvalidArgument},
	} {
		_, err := Get(context.Background(), addr, c.dataset, GetOptions{Filter: c.filter})
		if status.Code(errors.Unwrap(err)) != c.code && status.Code(err) != c.code {
			t.Errorf("%s %q: err = %v, want %v", c.dataset, c.filter, err, c.code)
		}
	}
}

// TestGetCancel: a client that stops early stops the server's scans and
// its own fetches: no goroutine (TestMain) or memory is left.
func TestGetCancel(t *testing.T) {
	st := testStore(t)
	smem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	addr := startServer(t, []Root{{Store: st}}, ServerOptions{Mem: smem})
	for _, order := range []collect.Order{collect.Arrival, collect.Dataset} {
		cmem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		ctx, cancel := context.WithCancel(context.Background())
		r, err := Get(ctx, addr, "taxi/", GetOptions{Order: order, Parallel: 4, Window: 1, Mem: cmem})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Next() {
			t.Fatal(r.Err())
		}
		r.Batch().Release()
		cancel()
		r.Close()
		cmem.AssertSize(t, 0)
	}
	// The server notices the cancelled calls and its scans release what
	// they hold (polled: the server tells the client nothing of them).
	deadline := time.Now().Add(5 * time.Second)
	for smem.CurrentAlloc() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	smem.AssertSize(t, 0)
}
