package flightsvc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// An Iceberg table under a root is served as the table, never as its
// Parquet files (which would show deleted rows): planned by package exec
// as its scan plans it, an endpoint per data file, each read by exec's
// scan with the data file and its deletes as the ticket carries them.

// served is a request's dataset as opened under the root that has it:
// Parquet files (ds), or an Iceberg table (table, whose metadata file is
// tableKey in the root's store).
type served struct {
	root     int
	ds       *scan.Dataset
	table    *exec.TablePlan
	tableKey string
}

func (d served) schema() *arrow.Schema {
	if d.table != nil {
		return d.table.Schema
	}
	return d.ds.Schema()
}

// inRoots finds the root whose prefix holds url, and the url's key in
// that root's store. A table's metadata names its files by absolute
// location (a local file by its path).
func (s *Server) inRoots(url string) (int, string, bool) {
	if strings.HasPrefix(url, "/") {
		url = "file://" + url
	}
	for i, root := range s.roots {
		if rest, ok := strings.CutPrefix(url, root.Store.URL(root.Prefix)); ok {
			return i, root.Prefix + rest, true
		}
	}
	return 0, "", false
}

// openInRoots is the store.Opener a served table's files are read
// through: the roots' own stores, and nothing outside the roots, whatever
// a table's metadata or a ticket names. The stores stay the server's.
func (s *Server) openInRoots(_ context.Context, url string) (*store.Store, string, error) {
	i, key, ok := s.inRoots(url)
	if !ok {
		return nil, "", &store.Error{Op: "open", URL: url, Kind: store.KindPermission,
			Err: errors.New("outside the roots this service serves")}
	}
	return s.roots[i].Store, key, nil
}

// openTable plans the request's table at url: its location or a
// metadata file under a root, or else the catalog's table of that name.
func (s *Server) openTable(ctx context.Context, url string, r Request) (served, error) {
	so := exec.ScanOptions{Columns: r.Columns, Filter: r.Filter}
	if _, _, ok := s.inRoots(url); !ok {
		so.Catalog = s.opts.Catalog
	}
	p, err := exec.PlanTable(ctx, s.openInRoots, url, so)
	if err != nil {
		return served{}, err
	}
	root, key, ok := s.inRoots(p.Table.URL)
	if !ok || !iceberg.IsMetadataURL(key) {
		return served{}, &store.Error{Op: "open", URL: p.Table.URL, Kind: store.KindPermission,
			Err: fmt.Errorf("table %s: its metadata file is outside the roots this service serves", url)}
	}
	return served{root: root, table: p, tableKey: key}, nil
}

// tableInfo is the FlightInfo of a table: an endpoint per data file the
// filter may keep, each ticket carrying the file and its deletes.
func (s *Server) tableInfo(d *flight.FlightDescriptor, r Request, t served) *flight.FlightInfo {
	sc := t.table.Schema
	hash := schemaHash(sc)
	info := &flight.FlightInfo{
		Schema:           flight.SerializeSchema(sc, s.opts.Mem),
		FlightDescriptor: d,
		Ordered:          r.Ordered,
		TotalRecords:     -1,
	}
	var rows int64
	deletes := false
	for i, task := range t.table.Tasks {
		info.TotalBytes += task.File.Size
		rows += task.File.Records
		deletes = deletes || len(task.Deletes) > 0
		// Bounds and counts served the planning; the read needs none.
		f := &task.File
		f.Lower, f.Upper, f.NullCounts, f.ValueCounts, f.NaNCounts = nil, nil, nil, nil, nil
		key := f.URL
		if _, k, ok := s.inRoots(f.URL); ok {
			key = k
		}
		tk := ticket{V: ticketVersion, Root: t.root, Dataset: r.Dataset, Columns: r.Columns, Filter: r.Filter,
			Ordered: r.Ordered, Part: i, File: i, Key: key, Table: t.tableKey, Task: &task, Schema: hash}
		info.Endpoint = append(info.Endpoint, &flight.FlightEndpoint{Ticket: &flight.Ticket{Ticket: tk.encode()}})
	}
	if r.Filter == "" && !deletes {
		info.TotalRecords = rows
	}
	return info
}

// doGetTable streams one data file of a table, its deletes applied and
// its rows filtered, as exec's scan reads it. Each batch's position is
// the endpoint's part, the file's index and key, and the batch's number;
// the last batch is marked so, as a row group's is.
func (s *Server) doGetTable(ctx context.Context, t ticket, stream flight.FlightService_DoGetServer) error {
	root := s.roots[t.Root]
	if !strings.HasPrefix(t.Table, root.Prefix) || !iceberg.IsMetadataURL(t.Table) {
		return status.Errorf(codes.InvalidArgument, "ticket names %s, not a table's metadata file under root %d", t.Table, t.Root)
	}
	var (
		w     *flight.Writer
		bad   error             // the schema differs from the plan's
		held  arrow.RecordBatch // the batch before, sent once the next shows it is not the last
		batch int
	)
	defer func() {
		if held != nil {
			held.Release()
		}
	}()
	send := func(rec arrow.RecordBatch, last bool) error {
		pos := collect.Pos{Part: t.Part, Position: scan.Position{File: t.File, Key: t.Key, Batch: batch, Last: last}}
		batch++
		if err := w.WriteWithAppMetadata(rec, collect.MarshalPos(pos)); err != nil {
			return err
		}
		s.metrics.batch(rec.NumRows())
		return nil
	}
	schema := func(sc *arrow.Schema) {
		if schemaHash(sc) != t.Schema {
			bad = status.Errorf(codes.FailedPrecondition, "%s: its schema %v differs from the table's as planned", root.Store.URL(t.Table), sc)
			return
		}
		w = flight.NewRecordWriter(stream, ipc.WithSchema(sc), ipc.WithAllocator(s.opts.Mem))
	}
	collectStage := exec.Collect(schema, func(rec arrow.RecordBatch) error {
		if bad != nil {
			return bad
		}
		if held != nil {
			err := send(held, false)
			held.Release()
			held = nil
			if err != nil {
				return err
			}
		}
		rec.Retain()
		held = rec
		return nil
	})
	src := exec.Scan([]string{root.Store.URL(t.Table)}, exec.ScanOptions{
		Columns: t.Columns, Filter: t.Filter, Tasks: []iceberg.Task{*t.Task},
		Memory: s.opts.Memory, Concurrency: s.opts.Concurrency,
	})
	err := exec.Run(ctx, exec.Pipeline{Source: src, Stages: []exec.Stage{collectStage}}, exec.Options{Mem: s.opts.Mem, Open: s.openInRoots})
	switch {
	case bad != nil:
		return bad
	case err == nil:
		err = ctx.Err()
	}
	if err != nil {
		return grpcError(err)
	}
	if w == nil {
		return status.Error(codes.Internal, "the table's scan gave no schema")
	}
	if held != nil {
		err := send(held, true)
		if err != nil {
			return grpcError(err)
		}
	}
	return w.Close()
}
