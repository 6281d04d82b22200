package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// ScanOptions configure Scan.
type ScanOptions struct {
	// Columns to read, in this order; empty means all.
	Columns []string
	// Used, when not nil, names the columns the stages after the scan
	// read; the others are not fetched (see scan.Options.Used). Run
	// sets it from the stages (PushColumns) when it is nil.
	Used []string
	// Filter keeps the rows for which it is true (package expr's
	// language); row groups and files it excludes are not read.
	Filter string
	// BatchRows is the most rows in a batch; zero means 64Ki.
	BatchRows int
	// Memory is the scan's budget (fetched bytes ahead of decoding and
	// decoding's buffers, see scan.Options.Memory); zero means scan's
	// default.
	Memory int64
	// Concurrency is how many row groups are decoded at once; zero means
	// GOMAXPROCS.
	Concurrency int
	// Dict names string columns to read as dictionary arrays (see
	// scan.Options.ReadDict): for columns of few distinct values, less to
	// decode, to send between stages and to group by.
	Dict []string
	// Arrival hands batches on as they are decoded instead of in dataset
	// order, each carrying its Position: a write to an Arrow IPC file
	// right after the per-batch stages stores them as they come (listed
	// in dataset order), and every other stage sees dataset order,
	// restored from the positions, so the results are those of dataset
	// order.
	Arrival bool
	// Int96Unit is scan.Options.Int96Unit.
	Int96Unit string
	// Stats, when set, is called with each dataset's scan figures when
	// its scan ends (after the last batch, or when the pipeline stops).
	Stats func(url string, st scan.Stats)
	// Open, when set, opens the URLs instead of Options.Open (a scan
	// through a modelled link, say). As with Options.Open, the stores it
	// returns are the caller's to close.
	Open store.Opener
	// RowGroups, when set, limits the scan to the row groups for which it
	// returns true (see scan.Options.RowGroups): key is the file's key in
	// its store, rowGroup its index in the file. Package fanout reads a
	// piece of a dataset this way; the batches are those a whole scan
	// gives for the same row groups.
	RowGroups func(key string, rowGroup int) bool
	// Snapshot and AsOf choose the snapshot of an Iceberg table (a URL
	// naming its metadata file); neither: the current one.
	Snapshot int64
	AsOf     time.Time
	// Catalog, when set, is an Iceberg REST catalog's URI, and the URLs
	// are its tables (NAMESPACE.TABLE).
	Catalog string
	// Tasks, when set, are the data files of the Iceberg table read, with
	// their deletes, as planned elsewhere (by a fan-out's driver), instead
	// of those its snapshot plans; its metadata is still read, for the
	// schema.
	Tasks []iceberg.Task
}

// Scan is a source that reads Parquet datasets with package scan: each
// URL names a file, a prefix (its .parquet objects in key order) or a
// glob. Row groups are decoded on several workers at once and come out
// in dataset order (URL, file, row group, batch), so every run gives the
// same batches. A Filter stage right after it hands its filter to the
// scan too, which then skips the row groups and files the filter's
// conjuncts exclude (see scan.Options.Prune), as Filter does.
func Scan(urls []string, opts ScanOptions) SourceStage { return &scanStage{urls: urls, opts: opts} }

type scanStage struct {
	urls []string
	opts ScanOptions
	// prune is the filter of the stage after the scan, for skipping.
	prune string
	// groupDict names the columns an aggregation after the scan groups
	// by: those that are strings are read as dictionaries (dictKeys).
	groupDict []string
}

func (s *scanStage) Name() string { return "scan" }

// withPrune is the scan with the filter of the stage after it to skip by.
func (s *scanStage) withPrune(filter string) *scanStage {
	c := *s
	c.prune = filter
	return &c
}

// invalidScan marks a scan error that comes from how the pipeline is
// written (a column the data lacks, a malformed filter), keeping its
// type for errors.As.
type invalidScan struct{ error }

func (e invalidScan) Unwrap() error        { return e.error }
func (e invalidScan) Is(target error) bool { return target == ErrInvalid }

func (s *scanStage) open(ctx context.Context, e *env) (Source, error) {
	if len(s.urls) == 0 {
		return nil, invalidf("scan: no URL given")
	}
	open := e.open
	if s.opts.Open != nil {
		open = s.opts.Open
	}
	var parts []func() (Source, error)
	var schema *arrow.Schema
	var groupsBefore int64 // the row groups of the URLs before
	for _, u := range s.urls {
		table := func(at string) error {
			sc, ps, err := s.icebergParts(ctx, e, open, at)
			if err != nil {
				return err
			}
			if schema == nil {
				schema = sc
			} else if !schema.Equal(sc) {
				return fmt.Errorf("scan: %s has schema %s, unlike the URLs before it (%s)", u, schemaString(sc), schemaString(schema))
			}
			parts = append(parts, ps...)
			return nil
		}
		if iceberg.IsMetadataURL(u) || s.opts.Catalog != "" {
			if err := table(u); err != nil {
				return nil, err
			}
			continue
		}
		base, rest := store.SplitGlob(u)
		st, key, err := open(ctx, base)
		if err != nil {
			return nil, err
		}
		key += rest
		ds, err := scan.Open(ctx, st, key, scan.Options{
			Columns:     s.opts.Columns,
			Used:        s.opts.Used,
			Filter:      s.opts.Filter,
			Prune:       s.prune,
			BatchRows:   s.opts.BatchRows,
			Memory:      s.opts.Memory,
			Concurrency: s.opts.Concurrency,
			ReadDict:    union(s.opts.Dict, s.groupDict...),
			RowGroups:   s.opts.RowGroups,
			Mem:         e.mem,
			Ordered:     !s.opts.Arrival,
			Int96Unit:   s.opts.Int96Unit,
		})
		var it *scan.IcebergTableError
		if errors.As(err, &it) {
			// A table's location: read it as the table, at the metadata
			// file the listing found (else icebergParts finds it).
			at := u
			if it.Metadata != "" {
				at = it.Metadata
			}
			if err := table(at); err != nil {
				return nil, err
			}
			continue
		}
		if s.opts.Snapshot != 0 || !s.opts.AsOf.IsZero() {
			if ds != nil {
				ds.Close()
			}
			return nil, invalidf("scan %s: --snapshot and --as-of choose the snapshot of an Iceberg table, and this is not one", u)
		}
		var nf *scan.NoFilesError
		if errors.As(err, &nf) || errors.Is(err, scan.ErrNotParquet) {
			// Not Parquet: Arrow IPC, CSV or JSON lines, told by content.
			// Opened once here for the schema, and again in its turn.
			parquetErr := err
			other := func() (Source, error) { return openObjects(ctx, e, st, key, u, s.opts, parquetErr) }
			src, err := other()
			if err != nil {
				return nil, err
			}
			osc := src.Schema()
			src.Close()
			if schema == nil {
				schema = osc
			} else if !schema.Equal(osc) {
				return nil, fmt.Errorf("scan: %s has schema %s, unlike the URLs before it (%s)", u, schemaString(osc), schemaString(schema))
			}
			parts = append(parts, other)
			continue
		}
		if err != nil {
			var ce *expr.ColumnError
			var ee *expr.Error
			switch {
			case errors.As(err, &ce), errors.As(err, &ee):
				return nil, invalidScan{err}
			}
			return nil, err
		}
		if err := checkDict(ds.Schema(), s.opts.Dict); err != nil {
			return nil, err
		}
		if schema == nil {
			schema = ds.Schema()
		} else if !schema.Equal(ds.Schema()) {
			return nil, fmt.Errorf("scan: %s has schema %s, unlike the URLs before it (%s)", u, schemaString(ds.Schema()), schemaString(schema))
		}
		var groups map[[2]int]int64
		if s.opts.Arrival {
			// Each batch says where it belongs, so that what depends on
			// order can restore it (see Position).
			groups = make(map[[2]int]int64, ds.RowGroups())
			for i, rg := range ds.Plan() {
				groups[[2]int{rg.File, rg.Index}] = groupsBefore + int64(i)
			}
			groupsBefore += int64(ds.RowGroups())
		}
		parts = append(parts, func() (Source, error) {
			return &scanSource{sc: ds.Scan(ctx), schema: schema, url: u, stats: s.opts.Stats, groups: groups}, nil
		})
	}
	return &concatSources{schema: schema, parts: parts}, nil
}

// checkDict checks that every column dict names (to read as a
// dictionary) is read, and read as a dictionary: a string or binary
// column of the files. The error wraps ErrInvalid.
func checkDict(schema *arrow.Schema, dict []string) error {
	for _, name := range dict {
		f, ok := schema.FieldsByName(name)
		switch {
		case !ok:
			return invalidf("scan: --dict names %q, which is not among the columns read (columns: %s)", name, columnList(schema))
		case f[0].Type.ID() != arrow.DICTIONARY:
			return invalidf("scan: --dict names %q, a %s column, which cannot be read as a dictionary (string and binary columns of the files can)", name, f[0].Type)
		}
	}
	return nil
}

// scanSource hands on a scanner's batches, in the order it delivers them
// (dataset order unless the scan is in arrival order), leaving out empty
// ones. In arrival order each batch carries its Position, and an empty
// last batch of a row group still goes on to say where the group ends.
type scanSource struct {
	sc     *scan.Scanner
	schema *arrow.Schema
	url    string
	stats  func(string, scan.Stats)
	done   bool
	// groups numbers the row groups read in dataset order (arrival
	// order only).
	groups map[[2]int]int64
}

func (o *scanSource) Schema() *arrow.Schema { return o.schema }

func (o *scanSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !o.sc.Next() {
			if err := o.sc.Err(); err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		b := o.sc.Batch()
		if o.groups != nil && (b.NumRows() > 0 || b.Pos.Last) {
			g, ok := o.groups[[2]int{b.Pos.File, b.Pos.RowGroup}]
			if !ok {
				b.Release()
				return nil, fmt.Errorf("scan: %s: row group %d of file %d is not in the scan's plan", o.url, b.Pos.RowGroup, b.Pos.File)
			}
			rec := WithPosition(b.RecordBatch, Position{Group: g, Batch: int64(b.Pos.Batch), Last: b.Pos.Last, File: b.Pos.File, RowGroup: b.Pos.RowGroup})
			b.Release()
			return rec, nil
		}
		if b.NumRows() > 0 {
			return b.RecordBatch, nil
		}
		b.Release()
	}
}

func (o *scanSource) Close() error {
	o.sc.Close()
	if o.stats != nil && !o.done {
		o.done = true
		o.stats(o.url, o.sc.Stats())
	}
	return nil
}

// concatSources reads sources one after another, opening each when the
// one before it ends.
type concatSources struct {
	schema *arrow.Schema
	parts  []func() (Source, error)
	cur    Source
}

func (c *concatSources) Schema() *arrow.Schema { return c.schema }

func (c *concatSources) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if c.cur == nil {
			if len(c.parts) == 0 {
				return nil, io.EOF
			}
			src, err := c.parts[0]()
			if err != nil {
				return nil, err
			}
			c.parts, c.cur = c.parts[1:], src
		}
		rec, err := c.cur.Next(ctx)
		if err != io.EOF {
			return rec, err
		}
		c.cur.Close()
		c.cur = nil
	}
}

func (c *concatSources) Close() error {
	if c.cur != nil {
		c.cur.Close()
		c.cur = nil
	}
	c.parts = nil
	return nil
}
