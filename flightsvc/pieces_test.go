package flightsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
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

// pieceStore holds "big/": two files of 20 row groups each; it returns
// a piece size that cuts them.
func pieceStore(t *testing.T) (*store.Store, int64) {
	t.Helper()
	st := testStore(t)
	if _, err := gen.Taxi(context.Background(), st, "big/", gen.Options{Rows: 20000, Files: 2, RowGroupRows: 500, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	ds, err := scan.Open(context.Background(), st, "big/", scan.Options{Columns: []string{"trip_distance"}})
	if err != nil {
		t.Fatal(err)
	}
	// About five pieces a file for the narrowest request the tests make,
	// up to one a row group for the widest.
	return st, ds.BytesNeeded() / 10
}

// fetched is where a batch a plain Flight client got belongs, and the
// ticket of the endpoint that streamed it.
type fetched struct {
	pos collect.Pos
	tk  ticket
}

// doGets fetches every endpoint of info at once with plain DoGets.
func doGets(t *testing.T, client flight.Client, info *flight.FlightInfo) []arrowtest.Got[fetched] {
	t.Helper()
	return arrowtest.DoGets(t, client, info, func(ep *flight.FlightEndpoint, meta []byte) (fetched, error) {
		tk, err := parseTicket(ep.Ticket.Ticket)
		if err != nil {
			return fetched{}, err
		}
		pos, err := collect.UnmarshalPos(meta)
		return fetched{pos, tk}, err
	})
}

// TestServeRowGroupPieces: files of many row groups are served as
// several endpoints of row group ranges; parallel DoGets of them give
// what a local scan reads, with the same positions, and so does Get in
// every order and format.
func TestServeRowGroupPieces(t *testing.T) {
	s, size := pieceStore(t)
	smem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer smem.AssertSize(t, 0)
	addr := startServer(t, []Root{{Store: s}}, ServerOptions{Mem: smem, PieceBytes: size})
	client, err := Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	for _, c := range []struct {
		columns []string
		filter  string
		ordered bool
	}{
		{nil, "", true},
		{nil, "", false},
		{[]string{"fare_amount", "passenger_count"}, "passenger_count > 2", true},
		{[]string{"trip_distance"}, "trip_distance > 5", false},
	} {
		name := fmt.Sprintf("%v/%q/ordered=%v", c.columns, c.filter, c.ordered)
		t.Run(name, func(t *testing.T) {
			so := scan.Options{Columns: c.columns, Filter: c.filter}
			want, wantPos := localScan(t, s, "big/", so)
			req := Request{Dataset: "big/", Columns: c.columns, Filter: c.filter, Ordered: c.ordered}
			info, err := client.GetFlightInfo(context.Background(), req.Descriptor())
			if err != nil {
				t.Fatal(err)
			}
			perFile := map[int]int{}
			for _, ep := range info.Endpoint {
				tk, err := parseTicket(ep.Ticket.Ticket)
				if err != nil {
					t.Fatal(err)
				}
				perFile[tk.File]++
			}
			if len(perFile) != 2 || perFile[0] < 3 || perFile[1] < 3 {
				t.Fatalf("endpoints per file %v, want several for each of the 2 files", perFile)
			}

			items := doGets(t, client, info)
			defer func() {
				for _, it := range items {
					it.Rec.Release()
				}
			}()
			for _, it := range items {
				if pos, tk := it.Key.pos, it.Key.tk; pos.File != tk.File || pos.Key != tk.Key || pos.RowGroup < tk.Lo || pos.RowGroup >= tk.Hi {
					t.Fatalf("endpoint for row groups [%d, %d) of file %d streamed a batch at %v", tk.Lo, tk.Hi, tk.File, pos)
				}
			}
			// Dataset order from the positions alone (the part is only
			// the endpoint's number), exactly as a local scan has it.
			slices.SortFunc(items, func(a, b arrowtest.Got[fetched]) int {
				return collect.Pos{Position: a.Key.pos.Position}.Compare(collect.Pos{Position: b.Key.pos.Position})
			})
			var got arrowtest.Checksum
			var gotPos []scan.Position
			for _, it := range items {
				got.Add(it.Rec)
				gotPos = append(gotPos, it.Key.pos.Position)
			}
			if got != want {
				t.Fatalf("parallel DoGets %v, local scan %v", got, want)
			}
			if !slices.Equal(gotPos, wantPos) {
				t.Fatalf("positions differ from a local scan's:\n%v\n%v", gotPos, wantPos)
			}
		})
	}

	want, _ := localScan(t, s, "big/", scan.Options{})
	for _, order := range []collect.Order{collect.Arrival, collect.Dataset} {
		for _, f := range []format.Format{format.IPCFile, format.IPCStream, format.Parquet} {
			if order == collect.Arrival && f != format.IPCFile {
				continue
			}
			cmem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			out, n, err := getInto(t, addr, "big/", GetOptions{Order: order, Parallel: 4, Mem: cmem}, f)
			if err != nil {
				t.Fatal(err)
			}
			if got := arrowtest.ReadChecksum(t, out, f.Name()); got != want || n < 6 {
				t.Errorf("get %v %v: %v from %d endpoints, local scan %v", order, f, got, n, want)
			}
			cmem.AssertSize(t, 0)
		}
	}
}

// TestTicketBadRange: a ticket for row groups a file does not have, or
// for no row groups, is refused with InvalidArgument.
func TestTicketBadRange(t *testing.T) {
	s, size := pieceStore(t)
	addr := startServer(t, []Root{{Store: s}}, ServerOptions{PieceBytes: size})
	client, err := Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	info, err := client.GetFlightInfo(context.Background(), Request{Dataset: "big/", Ordered: true}.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	good, err := parseTicket(info.Endpoint[0].Ticket.Ticket)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{18, 21}, {20, 22}, {3, 3}, {4, 2}, {-1, 2}} {
		tk := good
		tk.Lo, tk.Hi = r[0], r[1]
		b, _ := json.Marshal(tk)
		st, err := client.DoGet(context.Background(), &flight.Ticket{Ticket: b})
		if err == nil {
			var rr *flight.Reader
			rr, err = flight.NewRecordReader(st)
			if err == nil {
				for rr.Next() {
				}
				err = rr.Err()
				rr.Release()
			}
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("ticket for row groups [%d, %d) of a file of 20: err = %v, want InvalidArgument", r[0], r[1], err)
		}
	}
}
