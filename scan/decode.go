package scan

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/store"
)

// decode turns one fetched row group into batches and sends them. arrow-go
// reads each column chunk through a small buffered stream whose ReadAts
// unitReader serves from the unit's memory, so pages are decoded as their
// bytes arrive and no chunk is copied whole (unbuffered, arrow-go copies
// every chunk into fresh memory first); a panic of the decoder on a
// corrupt file becomes an error.
func (s *Scanner) decode(u *fetch.Unit, g *group, fr *flatReaders) (err error) {
	start := time.Now()
	src := &unitReader{u: u, g: g, s: s}
	var sending time.Duration
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("row group %d: decoding failed: %v", g.rg, r)
		}
		s.c.decode.Add(int64(time.Since(start) - sending - time.Duration(src.waited.Load())))
		s.c.fetchWait.Add(src.waited.Load())
	}()
	emit := func(b Batch) error {
		t := time.Now()
		err := s.send(b)
		sending += time.Since(t)
		return err
	}
	consts, err := s.partitionArrays(g)
	if err != nil {
		return err
	}
	defer releaseAll(consts)

	if len(g.file.leaves) == 0 {
		return s.countOnly(g, consts, emit)
	}

	mem := s.ds.opts.Mem
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled = true
	props.BufferSize = streamBuffer
	props.MaxUncompressedPageSize, props.MaxCompressedPageSize = g.pageLimit, g.packedLimit
	md := g.file.md
	if g.file.decodeMD != nil {
		md = g.file.decodeMD
	}
	pf, err := file.NewParquetReader(src, file.WithReadProps(props), file.WithMetadata(md))
	if err != nil {
		return err
	}
	var row int64
	n := 0
	// handle filters (unless filtered says decodeFlat did) and arranges
	// one batch of decoded rows and sends it on.
	handle := func(rec arrow.RecordBatch, decoded int64, filtered bool) error {
		pos := Position{File: g.file.index, Key: g.file.key, RowGroup: g.rg, Batch: n, Row: row}
		n++
		row += decoded
		s.c.rowsDecoded.Add(decoded)
		pos.Last = row >= g.rows
		if g.file.decodeMD != nil {
			if rec, err = s.int96Record(rec, g.file.md); err != nil {
				return fmt.Errorf("row group %d: %w", g.rg, err)
			}
		}
		out, err := s.finish(rec, g, consts, filtered)
		if g.file.decodeMD != nil {
			rec.Release()
		}
		if err != nil {
			return fmt.Errorf("row group %d: %w", g.rg, err)
		}
		if out.NumRows() == 0 && !pos.Last {
			out.Release()
			return nil
		}
		return emit(Batch{RecordBatch: out, Pos: pos})
	}
	flat, nflat, err := s.flatColumns(fr, pf, props, src, g)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range flat {
			if c != nil {
				c.release()
			}
		}
	}()
	s.c.flatChunks.Add(int64(nflat))
	if nflat == len(g.file.leaves) {
		return s.decodeFlat(g, flat, handle)
	}

	// arrow-go decodes the leaves that are not flat; each of its batches
	// gets as many rows of the flat ones, so the batches are cut where
	// arrow-go alone would cut them.
	var leaves []int
	for i, leaf := range g.file.leaves {
		if nflat == 0 || flat[i] == nil {
			leaves = append(leaves, leaf)
		}
	}
	arrowProps := pqarrow.ArrowReadProperties{BatchSize: g.batchRows}
	for _, leaf := range leaves {
		if s.ds.readDict[g.file.md.Schema.Column(leaf).ColumnPath()[0]] {
			arrowProps.SetReadDict(leaf, true)
		}
	}
	ar, err := pqarrow.NewFileReader(pf, arrowProps, mem)
	if err != nil {
		return err
	}
	rr, err := ar.GetRecordReader(s.ctx, leaves, []int{g.rg})
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		if nflat > 0 {
			if rec, err = s.withFlat(g, rec, flat); err != nil {
				return err
			}
		}
		err := handle(rec, rec.NumRows(), false)
		if nflat > 0 {
			rec.Release()
		}
		if err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil {
		if errors.Is(err, arrow.ErrInvalid) && hasInt96(g.file.md) && g.file.decodeMD == nil {
			// arrow-go's only invalid value of an INT96 column: one past 2262.
			return fmt.Errorf("row group %d: %w (read INT96 in a coarser unit: --int96-unit us, or scan.Options.Int96Unit)", g.rg, err)
		}
		return fmt.Errorf("row group %d: %w", g.rg, err)
	}
	if row != g.rows {
		return fmt.Errorf("row group %d: decoded %d rows, the footer says %d", g.rg, row, g.rows)
	}
	return nil
}

// withFlat is a new batch of arrow-go's batch rec of a row group's
// columns that are not flat and as many rows of its flat columns, in the
// order of the row group's leaves.
func (s *Scanner) withFlat(g *group, rec arrow.RecordBatch, flat []*flatColumn) (arrow.RecordBatch, error) {
	k := rec.NumRows()
	fields := make([]arrow.Field, 0, len(flat))
	cols := make([]arrow.Array, 0, len(flat))
	defer func() { releaseAll(cols) }()
	next, last := 0, ""
	for i, c := range flat {
		if c != nil {
			a, err := c.read(int(k))
			if err != nil {
				return nil, fmt.Errorf("row group %d: %w", g.rg, err)
			}
			cols = append(cols, a)
			fields = append(fields, arrow.Field{Name: c.name, Type: c.typ, Nullable: true})
			continue
		}
		// A field of arrow-go's batch holds all the leaves under it,
		// which are next to each other.
		name := g.file.md.Schema.Column(g.file.leaves[i]).ColumnPath()[0]
		if name == last && next > 0 {
			continue
		}
		if next >= int(rec.NumCols()) {
			return nil, fmt.Errorf("row group %d: arrow-go decoded %d columns, fewer than asked", g.rg, rec.NumCols())
		}
		last = name
		a := rec.Column(next)
		a.Retain()
		cols = append(cols, a)
		fields = append(fields, rec.Schema().Field(next))
		next++
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, k), nil
}

// decodeFlat decodes a row group all of whose columns are flat (flat.go)
// in batches of g.batchRows rows, as arrow-go's record reader would.
func (s *Scanner) decodeFlat(g *group, cols []*flatColumn, handle func(rec arrow.RecordBatch, decoded int64, filtered bool) error) error {
	s.c.flatGroups.Add(1)
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	if late := s.lateColumns(cols); late != nil {
		return s.decodeLate(g, cols, fields, late, handle)
	}
	arrs := make([]arrow.Array, len(cols))
	for row := int64(0); row < g.rows; {
		k := min(g.batchRows, g.rows-row)
		for i, c := range cols {
			a, err := c.read(int(k))
			if err != nil {
				releaseAll(arrs[:i])
				return fmt.Errorf("row group %d: %w", g.rg, err)
			}
			arrs[i] = a
		}
		rec := array.NewRecordBatch(schema, arrs, k)
		releaseAll(arrs)
		err := handle(rec, k, false)
		rec.Release()
		if err != nil {
			return err
		}
		row += k
	}
	return nil
}

// lateColumns says which of a flat row group's columns are decoded after
// the filter, only in the rows it keeps: string columns (their values
// are copied out one by one) that the filter does not read and that have
// no nulls to place. Nil when there is no filter, or no such column and
// none decoded as a dictionary to be delivered as strings (outString),
// which decodeLate does too.
func (s *Scanner) lateColumns(cols []*flatColumn) []bool {
	d := s.ds
	if d.filter == nil {
		return nil
	}
	var late []bool
	for i, c := range cols {
		isLate := c.kind == flatBytes && c.maxDef == 0 && d.filterSchema.FieldIndices(c.name) == nil
		if !isLate && !c.outString {
			continue
		}
		if late == nil {
			late = make([]bool, len(cols))
		}
		late[i] = isLate
	}
	return late
}

// decodeLate is decodeFlat with late columns: each batch's other columns
// are decoded and filtered first, then the late ones decoded in the rows
// kept alone (a scan of lineitem keeping a seventh of it copied every
// l_comment before), and those decoded as dictionaries for the filter
// turned into the kept rows' strings (outString). Columns only the filter
// reads are left out of the batch it hands on, filtered.
func (s *Scanner) decodeLate(g *group, cols []*flatColumn, fields []arrow.Field, late []bool, handle func(arrow.RecordBatch, int64, bool) error) error {
	d := s.ds
	s.c.lateGroups.Add(1)
	var early, out []arrow.Field
	delivered := make([]bool, len(cols))
	for i, f := range fields {
		if !late[i] {
			early = append(early, f)
		}
		if _, ok := d.schema.FieldsByName(f.Name); !ok {
			continue // the filter's alone
		}
		delivered[i] = true
		if cols[i].outString {
			f.Type = cols[i].typ.(*arrow.DictionaryType).ValueType
		}
		out = append(out, f)
	}
	earlySchema := arrow.NewSchema(early, nil)
	outSchema := arrow.NewSchema(out, nil)
	buf := d.filterRuns.Get()
	defer d.filterRuns.Put(buf)
	var keep []bool
	arrs := make([]arrow.Array, 0, len(out))
	var earlyArrs []arrow.Array
	for row := int64(0); row < g.rows; {
		k := min(g.batchRows, g.rows-row)
		earlyArrs = earlyArrs[:0]
		for i, c := range cols {
			if late[i] {
				continue
			}
			a, err := c.read(int(k))
			if err != nil {
				releaseAll(earlyArrs)
				return fmt.Errorf("row group %d: %w", g.rg, err)
			}
			earlyArrs = append(earlyArrs, a)
		}
		erec := array.NewRecordBatch(earlySchema, earlyArrs, k)
		releaseAll(earlyArrs)
		sc := erec.Schema()
		col := func(name string) arrow.Array { return erec.Column(sc.FieldIndices(name)[0]) }
		runs, kept, all, err := s.filterRows(erec, col, g, (*buf)[:0])
		*buf = runs
		if err != nil {
			erec.Release()
			return err
		}
		if !all {
			keep = runsKeep(keep, runs, int(k))
		}
		next := 0
		arrs = arrs[:0]
		for i, c := range cols {
			var src arrow.Array
			if !late[i] {
				src = erec.Column(next)
				next++
			}
			if !delivered[i] {
				continue
			}
			var a arrow.Array
			switch {
			case late[i] && all:
				a, err = c.read(int(k))
			case late[i]:
				a, err = c.readBytesKept(int(k), keep, kept)
			case c.outString && all:
				a, err = dictStrings(d.opts.Mem, src, []rowRun{{0, int(k)}}, int(k))
			case c.outString:
				a, err = dictStrings(d.opts.Mem, src, runs, kept)
			case all:
				a = src
				a.Retain()
			default:
				var ok bool
				if a, ok = takeRuns(d.opts.Mem, src, runs, kept); !ok {
					mask := runsMask(d.opts.Mem, runs, int(k))
					a, err = compute.FilterArray(s.cctx, src, mask, *compute.DefaultFilterOptions())
					mask.Release()
				}
			}
			if err != nil {
				releaseAll(arrs)
				erec.Release()
				return fmt.Errorf("row group %d: %w", g.rg, err)
			}
			arrs = append(arrs, a)
		}
		erec.Release()
		rows := k
		if !all {
			rows = int64(kept)
		}
		rec := array.NewRecordBatch(outSchema, arrs, rows)
		releaseAll(arrs)
		err = handle(rec, k, true)
		rec.Release()
		if err != nil {
			return err
		}
		row += k
	}
	return nil
}

// runsKeep is keep (reused) set to n rows, true in runs.
func runsKeep(keep []bool, runs []rowRun, n int) []bool {
	if cap(keep) < n {
		keep = make([]bool, n)
	}
	keep = keep[:n]
	clear(keep)
	for _, r := range runs {
		for i := r.start; i < r.start+r.n; i++ {
			keep[i] = true
		}
	}
	return keep
}

// countOnly delivers a row group none of whose file columns are needed:
// its row count comes from the footer, and nothing was fetched.
func (s *Scanner) countOnly(g *group, consts []arrow.Array, emit func(Batch) error) error {
	step := int64(s.ds.opts.BatchRows)
	n := 0
	if s.ds.filter != nil {
		// The filter reads only partition columns: it holds for every row
		// of the file or for none.
		one := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, 1)
		_, _, all, err := s.filterRows(one, nil, g, nil)
		one.Release()
		if err != nil {
			return err
		}
		if !all {
			s.c.rowsDecoded.Add(g.rows)
			cols := sliceAll(consts, 0)
			rec := array.NewRecordBatch(s.ds.schema, cols, 0)
			releaseAll(cols)
			return emit(Batch{RecordBatch: rec, Pos: Position{File: g.file.index, Key: g.file.key, RowGroup: g.rg, Last: true}})
		}
	}
	for row := int64(0); row < g.rows; row += step {
		k := min(step, g.rows-row)
		s.c.rowsDecoded.Add(k)
		cols := sliceAll(consts, k)
		rec := array.NewRecordBatch(s.ds.schema, cols, k)
		releaseAll(cols)
		pos := Position{File: g.file.index, Key: g.file.key, RowGroup: g.rg, Batch: n, Row: row, Last: row+k >= g.rows}
		if err := emit(Batch{RecordBatch: rec, Pos: pos}); err != nil {
			return err
		}
		n++
	}
	return nil
}

// finish filters a decoded batch and arranges its columns as the dataset
// schema says, adding partition columns. The result is a new batch the
// caller owns; rec is left as it was.
func (s *Scanner) finish(rec arrow.RecordBatch, g *group, consts []arrow.Array, filtered bool) (arrow.RecordBatch, error) {
	d := s.ds
	sc := rec.Schema()
	col := func(name string) arrow.Array { return rec.Column(sc.FieldIndices(name)[0]) }

	data := make([]arrow.Array, len(d.fileCols))
	for i, name := range d.fileCols {
		data[i] = col(name)
	}
	n := rec.NumRows()
	if d.filter != nil && !filtered {
		buf := d.filterRuns.Get()
		defer d.filterRuns.Put(buf)
		runs, kept, all, err := s.filterRows(rec, col, g, (*buf)[:0])
		*buf = runs
		if err != nil {
			return nil, err
		}
		if !all {
			var mask arrow.Array // for the columns takeRuns does not take
			defer func() {
				if mask != nil {
					mask.Release()
				}
			}()
			for i, c := range data {
				t, ok := takeRuns(d.opts.Mem, c, runs, kept)
				if !ok {
					if mask == nil {
						mask = runsMask(d.opts.Mem, runs, int(n))
					}
					if t, err = compute.FilterArray(s.cctx, c, mask, *compute.DefaultFilterOptions()); err != nil {
						return nil, err
					}
				}
				defer t.Release()
				data[i] = t
			}
			n = int64(kept)
		}
	}

	cols := make([]arrow.Array, 0, d.schema.NumFields())
	var extra []arrow.Array
	defer func() { releaseAll(extra) }()
	di, pi := 0, 0
	for _, f := range d.schema.Fields() {
		if pi < len(consts) && d.isPartOut(f.Name) {
			a := array.NewSlice(consts[pi], 0, n)
			extra = append(extra, a)
			cols = append(cols, a)
			pi++
			continue
		}
		cols = append(cols, data[di])
		di++
	}
	return array.NewRecordBatch(d.schema, cols, n), nil
}

// filterRows evaluates the row filter over a decoded batch: all when it
// keeps every row, else the runs of rows it keeps (appended to runs),
// kept in all.
func (s *Scanner) filterRows(rec arrow.RecordBatch, col func(string) arrow.Array, g *group, runs []rowRun) (_ []rowRun, kept int, all bool, err error) {
	d := s.ds
	n := rec.NumRows()
	cols := make([]arrow.Array, len(d.filterCols))
	var made []arrow.Array
	defer func() { releaseAll(made) }()
	for i, fc := range d.filterCols {
		if fc.part < 0 {
			cols[i] = col(fc.name)
			continue
		}
		a := constArray(d.opts.Mem, d.parts[fc.part].typ, g.file.parts[fc.part], int(n))
		made = append(made, a)
		cols[i] = a
	}
	fsc := d.filterSchema
	for i, c := range cols {
		if !arrow.TypeEqual(c.DataType(), fsc.Field(i).Type) {
			// A column decoded as a dictionary (filterDict).
			fields := fsc.Fields()
			fields[i].Type = c.DataType()
			fsc = arrow.NewSchema(fields, nil)
		}
	}
	frec := array.NewRecordBatch(fsc, cols, n)
	defer frec.Release()
	sc := d.filterMem.Get()
	defer d.filterMem.Put(sc)
	v, err := d.filter.EvalScratch(frec, sc)
	if err != nil {
		return nil, 0, false, err
	}
	if v.Const {
		if v.B[0] && v.IsValid(0) {
			return nil, int(n), true, nil
		}
		return nil, 0, n == 0, nil
	}
	runs, kept = keptRuns(v.B[:n], v.Valid, runs)
	return runs, kept, kept == int(n), nil
}

// runsMask is the boolean array of n rows that is true in runs.
func runsMask(mem memory.Allocator, runs []rowRun, n int) arrow.Array {
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := buf.Bytes()
	clear(bits)
	for _, r := range runs {
		bitutil.SetBitsTo(bits, int64(r.start), int64(r.n), true)
	}
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	buf.Release()
	defer data.Release()
	return array.MakeFromData(data)
}

// partitionArrays makes, for each partition column in the output, an array
// of the group's file's value as long as the longest batch; batches take
// slices of it.
func (s *Scanner) partitionArrays(g *group) ([]arrow.Array, error) {
	d := s.ds
	n := int(min(int64(d.opts.BatchRows), g.rows))
	var out []arrow.Array
	for _, f := range d.schema.Fields() {
		p := d.partIndex(f.Name)
		if p < 0 {
			continue
		}
		v := g.file.parts[p]
		out = append(out, constArray(d.opts.Mem, d.parts[p].typ, v, n))
	}
	return out, nil
}

func constArray(mem memory.Allocator, typ arrow.DataType, v partVal, n int) arrow.Array {
	switch typ.ID() {
	case arrow.INT64:
		b := array.NewInt64Builder(mem)
		defer b.Release()
		if v.null {
			b.AppendNulls(n)
		} else {
			b.Reserve(n)
			for range n {
				b.UnsafeAppend(v.i)
			}
		}
		return b.NewArray()
	default:
		b := array.NewStringBuilder(mem)
		defer b.Release()
		if v.null {
			b.AppendNulls(n)
		} else {
			b.Reserve(n)
			b.ReserveData(n * len(v.s))
			for range n {
				b.Append(v.s)
			}
		}
		return b.NewArray()
	}
}

func (d *Dataset) partIndex(name string) int {
	for i, p := range d.parts {
		if p.name == name {
			return i
		}
	}
	return -1
}

func (d *Dataset) isPartOut(name string) bool { return d.partIndex(name) >= 0 }

func sliceAll(as []arrow.Array, n int64) []arrow.Array {
	out := make([]arrow.Array, len(as))
	for i, a := range as {
		out[i] = array.NewSlice(a, 0, n)
	}
	return out
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}

// unitReader is the io.ReaderAt and io.Seeker arrow-go reads a row group
// through. Reads within the ranges fetched for the unit are served from
// its memory (waiting for bytes still arriving); any other read, which
// arrow-go should not make but an odd file might cause, is a direct
// ranged read of the same object version, counted as a fallback.
type unitReader struct {
	u      *fetch.Unit
	g      *group
	s      *Scanner
	pos    int64
	waited atomic.Int64 // nanoseconds in Unit.ReadAt
}

func (r *unitReader) ReadAt(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if off < 0 {
		return 0, fmt.Errorf("read at negative offset %d", off)
	}
	if covered(r.g.merged, off, int64(len(p))) {
		t := time.Now()
		n, err := r.u.ReadAt(p, off)
		r.waited.Add(int64(time.Since(t)))
		return n, err
	}
	return r.s.readDirect(r.g.file, p, off)
}

func (r *unitReader) Seek(offset int64, whence int) (int64, error) {
	abs := offset
	switch whence {
	case io.SeekCurrent:
		abs += r.pos
	case io.SeekEnd:
		abs += r.g.file.size
	}
	if abs < 0 {
		return 0, errors.New("seek to a negative position")
	}
	r.pos = abs
	return abs, nil
}

// readDirect reads bytes of a file the unit does not hold.
func (s *Scanner) readDirect(f *fileInfo, p []byte, off int64) (int, error) {
	if off >= f.size {
		return 0, io.EOF
	}
	n := min(int64(len(p)), f.size-off)
	s.c.fallbacks.Add(1)
	var m int
	opened := false
	err := policy.Do(s.ctx, func() error {
		rc, _, err := s.ds.st.ReadRange(s.ctx, f.key, store.Range{Off: off, Len: n}, store.ReadOptions{IfMatch: f.etag})
		if opened = err == nil; !opened {
			return err
		}
		defer rc.Close()
		m, err = io.ReadFull(rc, p[:n])
		return err
	})
	if err != nil && !opened {
		return 0, err
	}
	s.c.fallbackBytes.Add(int64(m))
	if err != nil {
		return m, fmt.Errorf("read [%d, %d): %w", off, off+n, err)
	}
	if n < int64(len(p)) {
		return m, io.EOF
	}
	return m, nil
}

// int96Record returns a new batch in which the INT96 columns arrow-go
// decoded as 12-byte binary (fileInfo.decodeMD) are timestamps of the
// dataset's unit.
func (s *Scanner) int96Record(rec arrow.RecordBatch, md *metadata.FileMetaData) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
	defer releaseAll(cols)
	for i, c := range rec.Columns() {
		fb, ok := c.(*array.FixedSizeBinary)
		if !ok || !isInt96(md, fields[i].Name) {
			c.Retain()
			cols[i] = c
			continue
		}
		a := int96Array(s.ds.opts.Mem, fb, s.ds.opts.int96)
		cols[i] = a
		fields[i].Type = a.DataType()
	}
	meta := rec.Schema().Metadata()
	return array.NewRecordBatch(arrow.NewSchema(fields, &meta), cols, rec.NumRows()), nil
}
