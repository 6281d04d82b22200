package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/scan"
)

// openScan reads each URL's dataset with package scan (footers in one
// read, fetches ahead, parallel decode) and puts its batches back in
// dataset order. scan delivers batches as they are decoded, tagged with
// their file and row group; with no filter and no pruning the row groups
// it reads are every non-empty one, so the order to restore is known.
// When a dataset has an empty row group that order is not known from
// scan's Files, and that dataset is read with the plain reader instead.
func (s *scanStage) openScan(ctx context.Context, e *env) (Source, error) {
	var parts []func() (Source, error)
	var schema *arrow.Schema
	for _, u := range s.urls {
		base, rest := splitGlob(u)
		st, key, err := e.open(ctx, base)
		if err != nil {
			return nil, err
		}
		key += rest
		ds, err := scan.Open(ctx, st, key, scan.Options{
			Columns:     s.opts.Columns,
			BatchRows:   s.opts.BatchRows,
			Memory:      s.opts.Memory,
			Concurrency: s.opts.Concurrency,
			ReadDict:    s.opts.Dict,
			RowGroups:   s.opts.RowGroups,
			Mem:         e.mem,
		})
		if err != nil {
			var nf *scan.NoFilesError
			if errors.As(err, &nf) {
				return nil, fmt.Errorf("scan: %w", err)
			}
			// scan names the column and the dataset; it is a mistake in
			// the pipeline, not in the data.
			if strings.Contains(err.Error(), ": no column ") {
				return nil, invalidf("%v", err)
			}
			return nil, err
		}
		for _, name := range s.opts.Dict {
			f, ok := ds.Schema().FieldsByName(name)
			switch {
			case !ok:
				return nil, invalidf("scan: --dict names %q, which is not among the columns read (columns: %s)", name, columnList(ds.Schema()))
			case f[0].Type.ID() != arrow.DICTIONARY:
				return nil, invalidf("scan: --dict names %q, a %s column, which cannot be read as a dictionary (string and binary columns of the files can)", name, f[0].Type)
			}
		}
		if schema == nil {
			schema = ds.Schema()
		} else if !schema.Equal(ds.Schema()) {
			return nil, fmt.Errorf("scan: %s has schema %s, unlike the URLs before it (%s)", u, schemaString(ds.Schema()), schemaString(schema))
		}
		var order []groupID
		if s.opts.RowGroups != nil {
			// A piece: the row groups scan reads (empty ones are never
			// read, so this order is complete).
			for _, g := range ds.Plan() {
				order = append(order, groupID{g.File, g.Index})
			}
			parts = append(parts, func() (Source, error) {
				return &orderedScan{sc: ds.Scan(ctx), order: order, schema: schema, buf: map[groupID]*groupBuf{}}, nil
			})
			continue
		}
		for fi, f := range ds.Files() {
			if f.Pruned {
				continue
			}
			for rg := range f.RowGroups {
				order = append(order, groupID{fi, rg})
			}
		}
		if len(order) == ds.RowGroups() {
			parts = append(parts, func() (Source, error) {
				return &orderedScan{sc: ds.Scan(ctx), order: order, schema: schema, buf: map[groupID]*groupBuf{}}, nil
			})
			continue
		}
		// Some row group is empty: read these files in order ourselves.
		files := make([]*pqFile, 0, len(ds.Files()))
		for _, f := range ds.Files() {
			files = append(files, &pqFile{st: st, key: f.Key})
		}
		parts = append(parts, func() (Source, error) {
			for _, f := range files {
				if _, err := f.openFooter(ctx, s.opts.Columns); err != nil {
					return nil, err
				}
			}
			batch := s.opts.BatchRows
			if batch <= 0 {
				batch = 64 << 10
			}
			return newPQSource(ctx, e, files, schema, batch), nil
		})
	}
	return &concatSources{schema: schema, parts: parts}, nil
}

// splitGlob cuts a URL with a glob into the part a store can be opened
// on (up to the last / before the first wildcard) and the rest.
func splitGlob(url string) (base, rest string) {
	i := strings.IndexAny(url, "*?[")
	if i < 0 {
		return url, ""
	}
	j := strings.LastIndex(url[:i], "/")
	return url[:j+1], url[j+1:]
}

type groupID struct{ file, rg int }

type groupBuf struct {
	recs []arrow.RecordBatch
	done bool
}

// orderedScan hands on a scanner's batches in dataset order. Batches of
// row groups ahead of the one due wait here; the scanner decodes row
// groups in dataset order, a few at a time, so that is a few row groups.
type orderedScan struct {
	sc     *scan.Scanner
	order  []groupID
	head   int
	buf    map[groupID]*groupBuf
	schema *arrow.Schema
	ended  bool
}

func (o *orderedScan) Schema() *arrow.Schema { return o.schema }

func (o *orderedScan) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if o.head >= len(o.order) {
			return nil, io.EOF
		}
		g := o.buf[o.order[o.head]]
		if g != nil && len(g.recs) > 0 {
			rec := g.recs[0]
			g.recs[0] = nil
			g.recs = g.recs[1:]
			return rec, nil
		}
		if g != nil && g.done {
			delete(o.buf, o.order[o.head])
			o.head++
			continue
		}
		if o.ended {
			return nil, fmt.Errorf("scan: row group %d of file %d never arrived", o.order[o.head].rg, o.order[o.head].file)
		}
		if !o.sc.Next() {
			if err := o.sc.Err(); err != nil {
				return nil, err
			}
			o.ended = true
			continue
		}
		b := o.sc.Batch()
		id := groupID{b.Pos.File, b.Pos.RowGroup}
		gb := o.buf[id]
		if gb == nil {
			gb = &groupBuf{}
			o.buf[id] = gb
		}
		if b.NumRows() > 0 {
			gb.recs = append(gb.recs, b.RecordBatch)
		} else {
			b.Release()
		}
		gb.done = gb.done || b.Pos.Last
	}
}

func (o *orderedScan) Close() error {
	o.sc.Close()
	for _, g := range o.buf {
		releaseAll(g.recs)
	}
	o.buf = nil
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
