package exec

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/internal/size"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// An Iceberg table is scanned file by file in its snapshot's order: each
// data file by package scan, its columns found by field id, then made
// the table's (renamed, promoted, a column the file lacks read as its
// identity partition value, its initial default or nulls), its deleted
// rows left out, and the filter applied.

// icebergRead is what every data file's read of one table shares.
type icebergRead struct {
	url    string
	table  *iceberg.Table
	fields []iceberg.Field // the table's columns read, in output order, then the filter's
	read   *arrow.Schema   // their Arrow types
	pred   *expr.Expr      // the filter over read, nil without one
	filter *filterer
	// prune is the filter text when the files can be pruned by it.
	prune string
	// posDeletes caches each position delete file, by data file path.
	mu         sync.Mutex // over the caches, for files opened at once
	posDeletes map[string]map[string][]int64
	eqDeletes  map[string]*eqDeleteSet
	// budget is the scan's memory; held, what the delete files read hold
	// of it (they are held for the whole scan).
	budget, held int64
	// stats sums the data files' scans, reported once the last is read.
	stats         func(url string, st scan.Stats)
	sum           scan.Stats
	files, closed int
}

// fileDone adds a data file's scan to the table's figures, and reports
// them after the last.
func (r *icebergRead) fileDone(st scan.Stats, rows, batches int64) {
	st.Files, st.FilesPruned, st.Rows, st.Batches = 0, 0, rows, batches
	r.sum.Add(st)
	r.closed++
	if r.closed == r.files && r.stats != nil {
		r.stats(r.url, r.sum)
	}
}

// TablePlan is the scan of an Iceberg table, planned as Scan plans it:
// the table at the snapshot chosen, the scan's output schema, and the
// data files to read with their deletes.
type TablePlan struct {
	Table  *iceberg.Table
	Schema *arrow.Schema
	// Tasks are the data files whose rows the filter may keep, in the
	// snapshot's order; Pruned counts those the manifests' bounds ruled
	// out.
	Tasks  []iceberg.Task
	Pruned int
}

// PlanTable plans the scan of the Iceberg table url (a location, a
// metadata file, or with opts.Catalog a catalog's table) as Scan would
// with opts (Columns, Filter, Snapshot, AsOf, Catalog, Tasks), without
// reading a data file: a service that cuts the table into pieces reads
// each with Scan and ScanOptions.Tasks. Errors in what opts ask wrap
// ErrInvalid.
func PlanTable(ctx context.Context, open store.Opener, url string, opts ScanOptions) (*TablePlan, error) {
	s := &scanStage{urls: []string{url}, opts: opts}
	r, out, tasks, err := s.planTable(ctx, open, url)
	if err != nil {
		return nil, err
	}
	return &TablePlan{Table: r.table, Schema: out, Tasks: tasks, Pruned: r.sum.FilesPruned}, nil
}

// icebergParts opens the table u names and returns its output schema and
// a source per data file, in the snapshot's order.
func (s *scanStage) icebergParts(ctx context.Context, e *env, open store.Opener, u string) (*arrow.Schema, []func() (Source, error), error) {
	if len(s.opts.Dict) > 0 {
		return nil, nil, invalidf("scan %s: --dict does not apply to an Iceberg table", u)
	}
	r, outSchema, tasks, err := s.planTable(ctx, open, u)
	if err != nil {
		return nil, nil, err
	}
	if r.pred != nil {
		r.filter = &filterer{name: "scan", pred: r.pred, mem: e.mem}
	}
	// Files counts the snapshot's data files, FilesPruned those the
	// manifests' bounds ruled out.
	r.files, r.stats = len(tasks), s.opts.Stats
	r.sum.Files = len(tasks) + r.sum.FilesPruned
	if r.files == 0 && r.stats != nil {
		r.stats(u, r.sum)
	}
	src := func() (Source, error) {
		return newIcebergSource(ctx, tasks, outSchema, func(ctx context.Context, task iceberg.Task) (*icebergFile, error) {
			return r.openFile(ctx, e, s, open, task, outSchema)
		}), nil
	}
	return outSchema, []func() (Source, error){src}, nil
}

// planTable loads the table u names, chooses its columns (those asked
// for, then the filter's), compiles the filter and plans the data files
// the filter may keep.
func (s *scanStage) planTable(ctx context.Context, open store.Opener, u string) (*icebergRead, *arrow.Schema, []iceberg.Task, error) {
	t, err := iceberg.Load(ctx, open, s.opts.Catalog, u, iceberg.Options{SnapshotID: s.opts.Snapshot, AsOf: s.opts.AsOf})
	if errors.Is(err, iceberg.ErrInvalid) {
		return nil, nil, nil, invalidScan{err}
	}
	if err != nil {
		return nil, nil, nil, err
	}
	r := &icebergRead{url: u, table: t, posDeletes: map[string]map[string][]int64{}, eqDeletes: map[string]*eqDeleteSet{},
		budget: cmp.Or(s.opts.Memory, defaultScanMemory)}
	var missing string
	if r.fields, missing = t.Schema.Select(s.opts.Columns); missing != "" {
		return nil, nil, nil, invalidScan{fmt.Errorf("scan %s: %w", u, &expr.ColumnError{Column: missing, Have: t.Schema.Names()})}
	}
	if used := s.opts.Used; used != nil {
		kept := slices.DeleteFunc(slices.Clone(r.fields), func(f iceberg.Field) bool { return !slices.Contains(used, f.Name) })
		if len(kept) == len(used) {
			r.fields = kept
		}
	}
	outSchema, err := iceberg.ArrowSchema(r.fields)
	if err != nil {
		return nil, nil, nil, err
	}
	filterText := s.opts.Filter
	// whole is the filter bound to every column of the table.
	var whole *expr.Expr
	if filterText != "" {
		// Every column a filter can name: those of types read.
		var readable []iceberg.Field
		for _, f := range t.Schema.Fields {
			if _, err := iceberg.ArrowSchema([]iceberg.Field{f}); err == nil {
				readable = append(readable, f)
			}
		}
		full, err := iceberg.ArrowSchema(readable)
		if err != nil {
			return nil, nil, nil, err
		}
		if whole, err = expr.CompileFilter(filterText, full); err != nil {
			return nil, nil, nil, invalidScan{fmt.Errorf("scan %s: filter %w", u, err)}
		}
		// The filter's columns are read too, and left out after it.
		c := whole
		var filterNames []string
		for _, i := range c.Columns() {
			name := full.Field(i).Name
			filterNames = append(filterNames, name)
			if f, ok := t.Schema.FieldByName(name); ok && !slices.ContainsFunc(r.fields, func(g iceberg.Field) bool { return g.ID == f.ID }) {
				r.fields = append(r.fields, f)
			}
		}
		if t.StableNames(filterNames) {
			// Row groups are skipped by their statistics only where the
			// files' columns of the filter's names are sure to be its
			// fields (see StableNames).
			r.prune = filterText
		}
	}
	if r.read, err = iceberg.ArrowSchema(r.fields); err != nil {
		return nil, nil, nil, err
	}
	if filterText != "" {
		if r.pred, err = expr.CompileFilter(filterText, r.read); err != nil {
			return nil, nil, nil, invalidScan{fmt.Errorf("scan %s: filter %w", u, err)}
		}
	}
	var keep func(iceberg.DataFile) bool
	if whole != nil {
		conds := whole.Conjuncts()
		keep = func(f iceberg.DataFile) bool {
			if excludesFile(conds, t.Schema, f) {
				r.sum.FilesPruned++
				return false
			}
			return true
		}
	}
	var tasks []iceberg.Task
	if s.opts.Tasks != nil {
		// Planned elsewhere: a fanned-out scan's piece.
		for _, task := range s.opts.Tasks {
			if keep == nil || keep(task.File) {
				tasks = append(tasks, task)
			}
		}
	} else if tasks, err = t.Plan(ctx, open, keep); err != nil {
		return nil, nil, nil, err
	}
	return r, outSchema, tasks, nil
}

// openAhead is how many data files are opened (footers read, deletes
// loaded) ahead of the one read: over a store a round trip away, files
// opened one after another would wait a round trip each.
const openAhead = 4

// icebergSource reads a table's data files in order. openAhead files are
// opened and scanned at once (the one read and those after it), so that
// over a store a round trip away a file's footer and first row groups
// are there by the time it is due; each scans within its share of the
// memory.
type icebergSource struct {
	schema *arrow.Schema
	ctx    context.Context
	cancel context.CancelFunc
	open   func(context.Context, iceberg.Task) (*icebergFile, error)
	tasks  []iceberg.Task
	files  []*fileOpen
	next   int // the file Next reads after cur
	cur    *icebergFile
}

// fileOpen is one data file being opened.
type fileOpen struct {
	done  chan struct{} // closed once f or err is set
	start chan struct{} // closed when the file may start scanning
	let   bool          // start is closed (Next's alone)
	f     *icebergFile
	err   error
}

// allow lets the file start scanning once it is open.
func (fo *fileOpen) allow() {
	if fo != nil && !fo.let {
		fo.let = true
		close(fo.start)
	}
}

func newIcebergSource(ctx context.Context, tasks []iceberg.Task, schema *arrow.Schema, open func(context.Context, iceberg.Task) (*icebergFile, error)) *icebergSource {
	ctx, cancel := context.WithCancel(ctx)
	return &icebergSource{schema: schema, ctx: ctx, cancel: cancel, open: open, tasks: tasks, files: make([]*fileOpen, len(tasks))}
}

func (s *icebergSource) Schema() *arrow.Schema { return s.schema }

// opening starts opening file i, once.
func (s *icebergSource) opening(i int) *fileOpen {
	if i >= len(s.tasks) {
		return nil
	}
	if s.files[i] == nil {
		fo := &fileOpen{done: make(chan struct{}), start: make(chan struct{})}
		s.files[i] = fo
		go func() {
			defer close(fo.done)
			f, err := s.open(s.ctx, s.tasks[i])
			if err != nil {
				fo.err = err
				return
			}
			select {
			case <-fo.start:
				f.start(s.ctx)
			case <-s.ctx.Done():
			}
			fo.f = f
		}()
	}
	return s.files[i]
}

func (s *icebergSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if s.cur == nil {
			if s.next == len(s.tasks) {
				return nil, io.EOF
			}
			for i := s.next; i < s.next+openAhead; i++ {
				s.opening(i)
			}
			fo := s.files[s.next]
			for i := s.next; i < s.next+openAhead; i++ {
				s.opening(i).allow()
			}
			select {
			case <-fo.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if fo.err != nil {
				return nil, fo.err
			}
			s.cur, fo.f = fo.f, nil
			s.next++
		}
		rec, err := s.cur.Next(ctx)
		if err != io.EOF {
			return rec, err
		}
		s.cur.Close()
		s.cur = nil
	}
}

// Close stops the files opened ahead and closes every file.
func (s *icebergSource) Close() error {
	s.cancel()
	if s.cur != nil {
		s.cur.Close()
		s.cur = nil
	}
	for _, fo := range s.files {
		if fo == nil {
			continue
		}
		<-fo.done
		if fo.f != nil {
			fo.f.Close()
			fo.f = nil
		}
	}
	return nil
}

// openFile starts the read of one data file.
func (r *icebergRead) openFile(ctx context.Context, e *env, s *scanStage, open store.Opener, task iceberg.Task, outSchema *arrow.Schema) (*icebergFile, error) {
	fields := r.fields
	// Files open concurrently: the delete files' caches are shared (the
	// data file's footer is read outside the lock).
	r.mu.Lock()
	locked := true
	defer func() {
		if locked {
			r.mu.Unlock()
		}
	}()
	var eq []*eqDeleteSet
	for _, d := range task.Deletes {
		if !d.Equality {
			continue
		}
		set, err := r.eqDeleteSet(ctx, e, open, d)
		if err != nil {
			return nil, err
		}
		eq = append(eq, set)
		// The delete's columns are read to compare, and left out after.
		for _, id := range d.FieldIDs {
			if !slices.ContainsFunc(fields, func(f iceberg.Field) bool { return f.ID == id }) {
				f, ok := r.table.Field(id)
				if !ok {
					return nil, fmt.Errorf("iceberg: equality delete file %s compares field %d, which the table's schema lacks", d.URL, id)
				}
				fields = append(slices.Clip(fields), f)
			}
		}
	}
	readSchema := r.read
	if len(fields) > len(r.fields) {
		var err error
		if readSchema, err = iceberg.ArrowSchema(fields); err != nil {
			return nil, err
		}
	}
	var pos []int64
	for _, d := range task.Deletes {
		if d.Equality {
			continue
		}
		byFile, err := r.posDeleteFile(ctx, e, open, d)
		if err != nil {
			return nil, err
		}
		pos = append(pos, byFile[task.File.Path]...)
	}
	slices.Sort(pos)
	// The deletes' share of the memory is the data files' no more.
	fileMemory := max((r.budget-r.held)/openAhead, 16<<20)
	r.mu.Unlock()
	locked = false

	// What the file holds in a column it lacks: its identity partition
	// value, else the column's initial default, else nulls (the order of
	// the Iceberg spec's column projection).
	consts := map[int][]byte{}
	for _, f := range fields {
		if v, ok := task.File.Identity[f.ID]; ok {
			consts[f.ID] = v
		} else if v, ok, err := f.Default(); err != nil {
			return nil, err
		} else if ok {
			consts[f.ID] = v
		}
	}

	st, key, err := open(ctx, task.File.URL)
	if err != nil {
		return nil, err
	}
	m := &fileColumns{fields: fields}
	so := scan.Options{
		FileColumns: m.choose,
		BatchRows:   s.opts.BatchRows,
		Concurrency: s.opts.Concurrency,
		Mem:         e.mem,
		Ordered:     true,
		Int96Unit:   s.opts.Int96Unit,
		Prune:       r.prune,
		// openAhead files scan at once, the one read and those after it,
		// each with its share of the scan's memory.
		Memory: fileMemory,
	}
	// The manifest gave the file's size: its footer is read straight
	// away, without listing it first (a round trip a file).
	var ds *scan.Dataset
	if task.File.Size > 0 {
		ds, err = scan.OpenObject(ctx, st, store.ObjectInfo{Key: key, Size: task.File.Size}, so)
	} else {
		ds, err = scan.Open(ctx, st, key, so)
	}
	if err != nil {
		return nil, err
	}
	starts := map[[2]int]int64{}
	for _, g := range ds.Plan() {
		starts[[2]int{g.File, g.Index}] = g.Start
	}
	return &icebergFile{r: r, ds: ds, m: m, read: readSchema, out: outSchema, starts: starts, pos: pos, eq: eq, consts: consts, mem: e.mem}, nil
}

// fileColumns maps the table's columns to a file's, by field id (by name
// in a file written without ids).
type fileColumns struct {
	fields []iceberg.Field
	names  []string // each field's column in the file, "" when it lacks it
}

func (m *fileColumns) choose(file *arrow.Schema) ([]string, error) {
	ids := map[int]string{}
	for _, f := range file.Fields() {
		if id := iceberg.FieldID(f); id >= 0 {
			ids[id] = f.Name
		}
	}
	m.names = make([]string, len(m.fields))
	var cols []string
	for i, f := range m.fields {
		name, ok := ids[f.ID]
		if len(ids) == 0 && file.HasField(f.Name) {
			name, ok = f.Name, true
		}
		if ok {
			m.names[i] = name
			cols = append(cols, name)
		}
	}
	if cols == nil {
		cols = []string{} // a row count only
	}
	return cols, nil
}

// icebergFile reads one data file of a table.
type icebergFile struct {
	r      *icebergRead
	ds     *scan.Dataset
	sc     *scan.Scanner
	m      *fileColumns
	read   *arrow.Schema
	out    *arrow.Schema
	starts map[[2]int]int64 // each row group's first row in the file
	pos    []int64          // deleted positions, ascending
	eq     []*eqDeleteSet
	consts map[int][]byte // by field id, what a column the file lacks holds (see openFile)
	mem    memory.Allocator
	// rows and batches are what the file gave after deletes and filter.
	rows, batches int64
	closed        bool
}

func (f *icebergFile) Schema() *arrow.Schema { return f.out }

func (f *icebergFile) Next(ctx context.Context) (arrow.RecordBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !f.sc.Next() {
			if err := f.sc.Err(); err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		b := f.sc.Batch()
		rec, err := f.shape(ctx, b)
		b.Release()
		if err != nil {
			return nil, err
		}
		if rec != nil && rec.NumRows() > 0 {
			f.rows += rec.NumRows()
			f.batches++
			return rec, nil
		}
		if rec != nil {
			rec.Release()
		}
	}
}

// shape makes a file's batch the table's: its columns found, cast and
// filled in, its deleted rows and those the filter refuses left out.
func (f *icebergFile) shape(ctx context.Context, b scan.Batch) (arrow.RecordBatch, error) {
	n := b.NumRows()
	if n == 0 {
		return nil, nil
	}
	cols := make([]arrow.Array, len(f.m.fields))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	fileSchema := b.Schema()
	for i, name := range f.m.names {
		want := f.read.Field(i).Type
		if name == "" {
			c, err := iceberg.Constant(f.mem, f.m.fields[i], f.consts[f.m.fields[i].ID], int(n))
			if err != nil {
				return nil, fmt.Errorf("iceberg: %s: %w", b.Pos.Key, err)
			}
			cols[i] = c
			continue
		}
		col := b.Column(fileSchema.FieldIndices(name)[0])
		if arrow.TypeEqual(col.DataType(), want) {
			col.Retain()
			cols[i] = col
			continue
		}
		c, err := compute.CastArray(ctx, col, compute.SafeCastOptions(want))
		if err != nil {
			return nil, fmt.Errorf("iceberg: %s: column %s is %s in the file, and %s in the table: %w", b.Pos.Key, f.m.fields[i].Name, col.DataType(), want, err)
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(f.read, cols, n)
	all := true
	var keep []bool
	if len(f.pos) > 0 || len(f.eq) > 0 || f.r.filter != nil {
		keep = make([]bool, n)
		for i := range keep {
			keep[i] = true
		}
	}
	if len(f.pos) > 0 {
		start := f.starts[[2]int{b.Pos.File, b.Pos.RowGroup}] + b.Pos.Row
		lo, _ := slices.BinarySearch(f.pos, start)
		for _, p := range f.pos[lo:] {
			if p >= start+n {
				break
			}
			keep[p-start], all = false, false
		}
	}
	for _, set := range f.eq {
		if set.remove(rec, keep) {
			all = false
		}
	}
	if f.r.filter != nil {
		sc := f.r.filter.scratch.Get()
		m, every, err := f.r.filter.mask(rec, sc)
		if err != nil {
			f.r.filter.scratch.Put(sc)
			rec.Release()
			return nil, err
		}
		if !every {
			all = false
			for i := range keep {
				keep[i] = keep[i] && m[i]
			}
		}
		f.r.filter.scratch.Put(sc)
	}
	if !all {
		kept, err := keepRows(ctx, f.mem, rec, keep)
		rec.Release()
		if err != nil {
			return nil, err
		}
		rec = kept
	}
	if int(rec.NumCols()) == f.out.NumFields() {
		return rec, nil
	}
	out := array.NewRecordBatch(f.out, rec.Columns()[:f.out.NumFields()], rec.NumRows())
	rec.Release()
	return out, nil
}

// start starts the file's scan: its row groups are fetched and decoded
// from then on, ahead of Next within the scan's memory.
func (f *icebergFile) start(ctx context.Context) { f.sc = f.ds.Scan(ctx) }

func (f *icebergFile) Close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	var st scan.Stats
	if f.sc != nil {
		f.sc.Close()
		st = f.sc.Stats()
	}
	f.r.fileDone(st, f.rows, f.batches)
	return nil
}

// keepRows is the rows of rec that keep marks.
func keepRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
	n := 0
	for _, k := range keep {
		if k {
			n++
		}
	}
	return takeRows(ctx, mem, rec, func(add func(int32)) {
		for i, k := range keep {
			if k {
				add(int32(i))
			}
		}
	}, n)
}

// posDeleteFile reads a position delete file once: its positions by the
// data file path they delete from.
func (r *icebergRead) posDeleteFile(ctx context.Context, e *env, open store.Opener, d iceberg.DeleteFile) (map[string][]int64, error) {
	if m, ok := r.posDeletes[d.URL]; ok {
		return m, nil
	}
	m := map[string][]int64{}
	err := readDeleteFile(ctx, e, open, d.URL, []string{"file_path", "pos"}, func(rec arrow.RecordBatch) error {
		paths, ok1 := rec.Column(0).(*array.String)
		pos, ok2 := rec.Column(1).(*array.Int64)
		if !ok1 || !ok2 {
			return fmt.Errorf("iceberg: position delete file %s: file_path is %s and pos %s, not string and long", d.URL, rec.Column(0).DataType(), rec.Column(1).DataType())
		}
		for i := range paths.Len() {
			if paths.IsNull(i) || pos.IsNull(i) {
				return fmt.Errorf("iceberg: position delete file %s: a null path or position", d.URL)
			}
			p := paths.Value(i)
			m[p] = append(m[p], pos.Value(i))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var bytes int64
	for p, pos := range m {
		bytes += mapEntryBytes + int64(len(p)) + 8*int64(cap(pos))
	}
	if err := r.hold(d.URL, bytes); err != nil {
		return nil, err
	}
	r.posDeletes[d.URL] = m
	return m, nil
}

// readDeleteFile passes each batch of a delete file's columns to fn.
func readDeleteFile(ctx context.Context, e *env, open store.Opener, url string, columns []string, fn func(arrow.RecordBatch) error) error {
	st, key, err := open(ctx, url)
	if err != nil {
		return err
	}
	ds, err := scan.Open(ctx, st, key, scan.Options{Columns: columns, Mem: e.mem, Ordered: true})
	if err != nil {
		return fmt.Errorf("iceberg: delete file: %w", err)
	}
	sc := ds.Scan(ctx)
	defer sc.Close()
	for sc.Next() {
		b := sc.Batch()
		err := fn(b.RecordBatch)
		b.Release()
		if err != nil {
			return err
		}
	}
	return sc.Err()
}

// eqDeleteSet is an equality delete file's rows, as keys of its fields.
type eqDeleteSet struct {
	ids   []int
	keys  map[string]bool
	bytes int64 // what keys holds, about
}

// mapEntryBytes is about what a Go map entry of a string key costs beside
// the key's bytes: the string header, the value's slot, the bucket's
// share (at the load factor Go maps keep).
const mapEntryBytes = 48

// hold counts a delete file's bytes against the scan's memory: the
// delete files that apply are held whole for the whole scan, and may
// take at most half of it, so that the data files' scans keep the rest.
// Past that the scan fails rather than grow without bound.
func (r *icebergRead) hold(url string, bytes int64) error {
	r.held += bytes
	if r.held > r.budget/2 {
		return fmt.Errorf("iceberg: %s: with %s, the delete files read hold about %s, past half the scan's memory budget (%s): give the scan more memory (--memory)",
			r.url, url, size.Format(r.held), size.Format(r.budget))
	}
	return nil
}

// eqDeleteSet reads an equality delete file once.
func (r *icebergRead) eqDeleteSet(ctx context.Context, e *env, open store.Opener, d iceberg.DeleteFile) (*eqDeleteSet, error) {
	if s, ok := r.eqDeletes[d.URL]; ok {
		return s, nil
	}
	var fields []iceberg.Field
	for _, id := range d.FieldIDs {
		f, ok := r.table.Field(id)
		if !ok {
			return nil, fmt.Errorf("iceberg: equality delete file %s compares field %d, which the table's schema lacks", d.URL, id)
		}
		fields = append(fields, f)
	}
	want, err := iceberg.ArrowSchema(fields)
	if err != nil {
		return nil, err
	}
	set := &eqDeleteSet{ids: d.FieldIDs, keys: map[string]bool{}}
	st, key, err := open(ctx, d.URL)
	if err != nil {
		return nil, err
	}
	m := &fileColumns{fields: fields}
	ds, err := scan.Open(ctx, st, key, scan.Options{FileColumns: m.choose, Mem: e.mem, Ordered: true})
	if err != nil {
		return nil, fmt.Errorf("iceberg: equality delete file: %w", err)
	}
	if slices.Contains(m.names, "") {
		return nil, fmt.Errorf("iceberg: equality delete file %s lacks a column it deletes by", d.URL)
	}
	sc := ds.Scan(ctx)
	defer sc.Close()
	for sc.Next() {
		b := sc.Batch()
		err := func() error {
			defer b.Release()
			cols := make([]arrow.Array, len(fields))
			for i, name := range m.names {
				col := b.Column(b.Schema().FieldIndices(name)[0])
				if !arrow.TypeEqual(col.DataType(), want.Field(i).Type) {
					c, err := compute.CastArray(ctx, col, compute.SafeCastOptions(want.Field(i).Type))
					if err != nil {
						return err
					}
					defer c.Release()
					col = c
				}
				cols[i] = col
			}
			rec := array.NewRecordBatch(want, cols, b.NumRows())
			defer rec.Release()
			return set.add(rec)
		}()
		if err != nil {
			return nil, fmt.Errorf("iceberg: equality delete file %s: %w", d.URL, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := r.hold(d.URL, set.bytes); err != nil {
		return nil, err
	}
	r.eqDeletes[d.URL] = set
	return set, nil
}

func (s *eqDeleteSet) encoder(sc *arrow.Schema) (*keyEncoder, error) {
	var names []string
	for _, id := range s.ids {
		i := slices.IndexFunc(sc.Fields(), func(f arrow.Field) bool { return iceberg.FieldID(f) == id })
		if i < 0 {
			return nil, errors.New("a field the delete compares is not read")
		}
		names = append(names, sc.Field(i).Name)
	}
	return newKeyEncoder("iceberg equality delete", sc, names)
}

func (s *eqDeleteSet) add(rec arrow.RecordBatch) error {
	k, err := s.encoder(rec.Schema())
	if err != nil {
		return err
	}
	var rows keyRows
	k.encode(rec, &rows)
	for i := range int(rec.NumRows()) {
		k := rows.row(i)
		if !s.keys[string(k)] {
			s.keys[string(k)] = true
			s.bytes += mapEntryBytes + int64(len(k))
		}
	}
	return nil
}

// remove clears keep for the rows of rec the set deletes, and says
// whether it cleared any.
func (s *eqDeleteSet) remove(rec arrow.RecordBatch, keep []bool) bool {
	k, err := s.encoder(rec.Schema())
	if err != nil {
		return false // openFile reads every field the deletes compare
	}
	var rows keyRows
	k.encode(rec, &rows)
	any := false
	for i := range keep {
		if keep[i] && s.keys[string(rows.row(i))] {
			keep[i], any = false, true
		}
	}
	return any
}

// excludesFile says whether the bounds and counts f's manifest entry
// records prove that no row of it passes the filter whose conjuncts are
// conds: for some conjunct, no term can hold on the file.
func excludesFile(conds []expr.Conjunct, schema *iceberg.Schema, f iceberg.DataFile) bool {
	for _, c := range conds {
		if !slices.ContainsFunc(c, func(t expr.Term) bool { return !excludesTerm(t, schema, f) }) {
			return true
		}
	}
	return false
}

// excludesTerm says whether no row of f can satisfy t.
func excludesTerm(t expr.Term, schema *iceberg.Schema, f iceberg.DataFile) bool {
	fld, ok := schema.FieldByName(t.Column)
	if !ok {
		return false
	}
	nulls, hasNulls := f.NullCounts[fld.ID]
	values, hasValues := f.ValueCounts[fld.ID]
	allNull := hasNulls && hasValues && nulls == values
	switch t.Op {
	case expr.OpIsNull:
		return hasNulls && nulls == 0
	case expr.OpNotNull:
		return allNull
	}
	if allNull {
		return true // a comparison holds for no null
	}
	if (fld.Type == "float" || fld.Type == "double") && (t.Op == expr.OpGt || t.Op == expr.OpGe) {
		// The bounds leave NaN out, and a filter orders NaN above every
		// number: only a file known to hold none is ruled out by them.
		if n, ok := f.NaNCounts[fld.ID]; !ok || n > 0 {
			return false
		}
	}
	lo, ok1 := boundOf(fld.Type, f.Lower[fld.ID])
	hi, ok2 := boundOf(fld.Type, f.Upper[fld.ID])
	lit, ok3 := literalOf(fld.Type, t.Value)
	if !ok1 || !ok2 || !ok3 {
		return false
	}
	cLo, ok1 := lit.compare(lo)
	cHi, ok2 := lit.compare(hi)
	if !ok1 || !ok2 {
		return false
	}
	switch t.Op {
	case expr.OpEq:
		return cLo < 0 || cHi > 0
	case expr.OpLt: // v < lit fails for all when lo >= lit
		return cLo <= 0
	case expr.OpLe:
		return cLo < 0
	case expr.OpGt:
		return cHi >= 0
	case expr.OpGe:
		return cHi > 0
	}
	return false
}

// statBound is a value of a column's bounds or of a filter's literal, in one
// domain: integers (dates in days, timestamps in nanoseconds), floats or
// bytes.
type statBound struct {
	kind byte // 'i', 'f' or 'b'
	i    int64
	f    float64
	b    []byte
}

// compare orders a against b; ok is false across domains or for NaN.
func (a statBound) compare(b statBound) (int, bool) {
	switch {
	case a.kind == 'b' && b.kind == 'b':
		return strings.Compare(string(a.b), string(b.b)), true
	case a.kind == 'i' && b.kind == 'i':
		return cmp.Compare(a.i, b.i), true
	case a.kind == 'b' || b.kind == 'b':
		return 0, false
	}
	af, bf := a.f, b.f
	if a.kind == 'i' {
		af = float64(a.i)
	}
	if b.kind == 'i' {
		bf = float64(b.i)
	}
	if math.IsNaN(af) || math.IsNaN(bf) || math.Abs(af) > 1<<53 || math.Abs(bf) > 1<<53 {
		return 0, false
	}
	return cmp.Compare(af, bf), true
}

// boundOf reads a bound in Iceberg's single-value form for a column of
// type t (a column promoted from int or float keeps its old files'
// 4-byte bounds). Types it does not read prune nothing.
func boundOf(t iceberg.Type, b []byte) (statBound, bool) {
	le := func() (int64, bool) {
		switch len(b) {
		case 4:
			return int64(int32(binary.LittleEndian.Uint32(b))), true
		case 8:
			return int64(binary.LittleEndian.Uint64(b)), true
		}
		return 0, false
	}
	switch t {
	case "int", "long", "date":
		i, ok := le()
		return statBound{kind: 'i', i: i}, ok
	case "timestamp", "timestamptz":
		i, ok := le()
		if !ok || i > math.MaxInt64/1000 || i < math.MinInt64/1000 {
			return statBound{}, false
		}
		return statBound{kind: 'i', i: i * 1000}, true
	case "timestamp_ns", "timestamptz_ns":
		i, ok := le()
		return statBound{kind: 'i', i: i}, ok
	case "float", "double":
		switch len(b) {
		case 4:
			return statBound{kind: 'f', f: float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))}, true
		case 8:
			return statBound{kind: 'f', f: math.Float64frombits(binary.LittleEndian.Uint64(b))}, true
		}
	case "string":
		// A statBound may be truncated: a lower one stays at most the least
		// value, an upper one at least the greatest.
		return statBound{kind: 'b', b: b}, b != nil
	}
	return statBound{}, false
}

// literalOf is a filter's constant in the domain of a column of type t.
func literalOf(t iceberg.Type, v expr.Vec) (statBound, bool) {
	switch {
	case t == "string" && v.K == expr.KindString:
		return statBound{kind: 'b', b: []byte(v.S(0))}, true
	case t == "date" && v.K == expr.KindDate, (t == "timestamp" || t == "timestamptz" || t == "timestamp_ns" || t == "timestamptz_ns") && v.K == expr.KindTime:
		return statBound{kind: 'i', i: v.I[0]}, true
	case t == "int" || t == "long" || t == "float" || t == "double":
		switch v.K {
		case expr.KindInt:
			return statBound{kind: 'i', i: v.I[0]}, true
		case expr.KindFloat:
			return statBound{kind: 'f', f: v.F[0]}, true
		}
	}
	return statBound{}, false
}
