package flightsvc

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/internal/icebergtest"
	"github.com/sluice-data/sluice/store"
)

// tableRows fetches a dataset with Get and prints its rows as
// icebergtest does iceberg-go's, sorted.
func tableRows(t *testing.T, addr string, r Request, mem memory.Allocator) ([]string, *flight.FlightInfo, error) {
	t.Helper()
	remote, err := Get(context.Background(), addr, r.Dataset, GetOptions{Columns: r.Columns, Filter: r.Filter, Order: collect.Dataset, Parallel: 3, Mem: mem})
	if err != nil {
		return nil, nil, err
	}
	defer remote.Close()
	var rows []string
	err = collect.Drain(remote.Stream, func(b collect.Batch) error {
		rows = append(rows, icebergtest.NamedRows(b.RecordBatch)...)
		b.Release()
		return nil
	})
	slices.Sort(rows)
	return rows, remote.Info, err
}

// keepRows is the rows of want (printed by icebergtest.NamedRows) that
// keep passes, with only the columns cols (all for nil).
func keepRows(want []string, cols []string, keep func(map[string]string) bool) []string {
	var out []string
	for _, r := range want {
		v := map[string]string{}
		var cells []string
		for _, cell := range strings.Fields(r) {
			k, val, _ := strings.Cut(cell, "=")
			v[k] = val
			if cols == nil || slices.Contains(cols, k) {
				cells = append(cells, cell)
			}
		}
		if keep == nil || keep(v) {
			out = append(out, strings.Join(cells, " "))
		}
	}
	slices.Sort(out)
	return out
}

// TestFlightIcebergTable serves an Iceberg table that iceberg-go wrote
// (position and equality deletes, a renamed, a promoted, an added and a
// dropped column) and fetches it by its location and by its metadata
// files, whole, projected and filtered: the rows are iceberg-go's
// reading of the table at each metadata file (its current snapshot and
// schema), an endpoint per data file. A table that is not there is one
// NotFound; a ticket naming a file outside the roots is refused.
func TestFlightIcebergTable(t *testing.T) {
	dir := t.TempDir()
	steps := icebergtest.Fixture(t, dir)
	last := steps[len(steps)-1]
	st, _, err := store.Open(context.Background(), dir+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	addr := startServer(t, []Root{{Store: st}}, ServerOptions{Mem: mem, Concurrency: 2})
	rel := func(metadata string) string {
		r, err := filepath.Rel(dir, metadata)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	id := func(v map[string]string) int {
		n, _ := strconv.Atoi(v["id"])
		return n
	}
	cases := []struct {
		name string
		r    Request
		want []string
	}{
		{"location", Request{Dataset: "db/t"}, last.Current},
		{"location/", Request{Dataset: "db/t/"}, last.Current},
		{"metadata file", Request{Dataset: rel(last.Metadata)}, last.Current},
		{"projected and filtered", Request{Dataset: "db/t", Columns: []string{"region", "id"}, Filter: "id < 40"},
			keepRows(last.Current, []string{"region", "id"}, func(v map[string]string) bool { return id(v) < 40 })},
		{"filter on a column read not", Request{Dataset: "db/t", Columns: []string{"id"}, Filter: "region = 'eu'"},
			keepRows(last.Current, []string{"id"}, func(v map[string]string) bool { return v["region"] == "eu" })},
	}
	for i, s := range steps {
		cases = append(cases, struct {
			name string
			r    Request
			want []string
		}{s.What, Request{Dataset: rel(s.Metadata)}, s.Current})
		if i == 5 {
			// Rows under the new schema: a filter on the promoted column.
			cases = append(cases, struct {
				name string
				r    Request
				want []string
			}{s.What + ", filtered", Request{Dataset: rel(s.Metadata), Filter: "n >= 1200"}, s.Filtered["n >= 1200"]})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.want) == 0 {
				t.Fatal("iceberg-go read no rows: the case is wrong")
			}
			got, info, err := tableRows(t, addr, c.r, mem)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%d rows, iceberg-go %d", len(got), len(c.want))
			}
			if len(info.Endpoint) == 0 {
				t.Errorf("no endpoints")
			}
		})
	}

	// An endpoint per data file of the current snapshot, and the bounds
	// in the manifests leave out the files of other regions.
	_, all, err := tableRows(t, addr, Request{Dataset: "db/t"}, mem)
	if err != nil {
		t.Fatal(err)
	}
	_, eu, err := tableRows(t, addr, Request{Dataset: "db/t", Filter: "region = 'eu'"}, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(eu.Endpoint) == 0 || len(eu.Endpoint) >= len(all.Endpoint) {
		t.Errorf("a filter on the partition column: %d endpoints of %d", len(eu.Endpoint), len(all.Endpoint))
	}

	client, err := Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	// Listed as one dataset, its Parquet files as none.
	var names []string
	for r := range listFlights(t, client) {
		names = append(names, r.Dataset)
	}
	if !slices.Equal(names, []string{"db/t/"}) {
		t.Errorf("ListFlights: %q, want the table alone", names)
	}

	// A table that is not there: one line, NotFound.
	for _, ds := range []string{"db/nope", "db/t/metadata/v99.metadata.json"} {
		_, _, err := tableRows(t, addr, Request{Dataset: ds}, mem)
		t.Logf("%s: %v", ds, err)
		if status.Code(err) != codes.NotFound && status.Code(errors.Unwrap(err)) != codes.NotFound || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line, NotFound", ds, err)
		}
	}

	// A ticket is the client's to send: one naming a data file outside
	// the roots is refused, not read.
	info, err := client.GetFlightInfo(ctx, Request{Dataset: "db/t"}.Descriptor())
	if err != nil {
		t.Fatal(err)
	}
	var tk ticket
	if err := json.Unmarshal(info.Endpoint[0].Ticket.Ticket, &tk); err != nil {
		t.Fatal(err)
	}
	tk.Task.File.URL = "/etc/passwd"
	sg, err := client.DoGet(ctx, &flight.Ticket{Ticket: tk.encode()})
	if err == nil {
		_, err = sg.Recv()
	}
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "outside the roots") {
		t.Errorf("a ticket naming /etc/passwd: %v, want PermissionDenied", err)
	}

	// A table whose first files were added as they were: their region
	// is their partition's, their score the column's initial default.
	mdir := t.TempDir()
	m := icebergtest.MigratedTable(t, mdir)
	mst, _, err := store.Open(context.Background(), mdir+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mst.Close()
	migrated := startServer(t, []Root{{Store: mst}}, ServerOptions{Mem: mem})
	if got, _, err := tableRows(t, migrated, Request{Dataset: "db/m"}, mem); err != nil || !slices.Equal(got, m.Want) {
		t.Errorf("the migrated table: %d rows, %v; want %d", len(got), err, len(m.Want))
	}

	// Through a REST catalog: its table, pinned by the metadata file it
	// names, when that is under a root.
	t.Setenv("SLUICE_ICEBERG_CREDENTIAL", "sluice:s3cret")
	cat := icebergtest.RESTCatalog(t, map[string]string{"db.t": last.Metadata}, "sluice", "s3cret")
	withCatalog := startServer(t, []Root{{Store: st}}, ServerOptions{Mem: mem, Catalog: cat.URL + "?warehouse=main"})
	if got, _, err := tableRows(t, withCatalog, Request{Dataset: "db.t", Filter: "id < 40"}, mem); err != nil ||
		!slices.Equal(got, keepRows(last.Current, nil, func(v map[string]string) bool { return id(v) < 40 })) {
		t.Errorf("the catalog's db.t: %d rows, %v", len(got), err)
	}
	if _, _, err := tableRows(t, withCatalog, Request{Dataset: "db.nope"}, mem); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), "Table does not exist") {
		t.Errorf("a table the catalog lacks: %v, want NotFound", err)
	}
	other, _, err := store.Open(context.Background(), t.TempDir()+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	elsewhere := startServer(t, []Root{{Store: other}}, ServerOptions{Mem: mem, Catalog: cat.URL})
	_, _, err = tableRows(t, elsewhere, Request{Dataset: "db.t"}, mem)
	t.Logf("db.t outside the roots: %v", err)
	if status.Code(err) != codes.PermissionDenied || strings.Contains(err.Error(), "\n") {
		t.Errorf("a catalog's table outside the roots: %v, want PermissionDenied", err)
	}
}
