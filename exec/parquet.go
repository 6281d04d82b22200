package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/store"
)

// ScanOptions configure Scan.
type ScanOptions struct {
	// Columns to read, in this order; empty means all.
	Columns []string
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
	// RowGroups, when set, limits the scan to the row groups for which it
	// returns true (see scan.Options.RowGroups): key is the file's key in
	// its store, rowGroup its index in the file. Package dist reads a
	// piece of a dataset this way; the batches are those a whole scan
	// gives for the same row groups.
	RowGroups func(key string, rowGroup int) bool
}

// ScanOf returns the URLs and options of a Scan source stage, so a
// planner can cut its datasets into pieces; ok is false for other
// sources.
func ScanOf(s SourceStage) (urls []string, opts ScanOptions, ok bool) {
	sc, ok := s.(*scanStage)
	if !ok {
		return nil, ScanOptions{}, false
	}
	return slices.Clone(sc.urls), sc.opts, true
}

// Scan is a source that reads Parquet datasets with package scan: each
// URL names a file, a prefix (its .parquet objects in key order) or a
// glob. Row groups are decoded on several workers at once and come out
// in dataset order (URL, file, row group, batch), so every run gives the
// same batches.
func Scan(urls []string, opts ScanOptions) SourceStage { return &scanStage{urls: urls, opts: opts} }

type scanStage struct {
	urls []string
	opts ScanOptions
}

func (s *scanStage) Name() string { return "scan" }

// pqFile is one Parquet object of a dataset.
type pqFile struct {
	st   *store.Store
	key  string
	ra   *store.ReaderAt
	meta *metadata.FileMetaData
	cols []int // leaf columns to read, in file order
	// perm puts the columns read (in file order) in the order asked for.
	perm []int
}

func (s *scanStage) open(ctx context.Context, e *env) (Source, error) {
	if len(s.urls) == 0 {
		return nil, invalidf("scan: no URL given")
	}
	return s.openScan(ctx, e)
}

// listInputs returns the object key names, or the objects under it as a
// prefix that end in suffix, in key order.
func listInputs(ctx context.Context, st *store.Store, key, suffix string) ([]store.ObjectInfo, error) {
	if key != "" && !strings.HasSuffix(key, "/") {
		info, err := st.Stat(ctx, key)
		if err == nil {
			return []store.ObjectInfo{info}, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		key += "/"
	}
	objs, err := st.List(ctx, key)
	if err != nil {
		return nil, err
	}
	var out []store.ObjectInfo
	for _, o := range objs {
		if strings.HasSuffix(o.Key, suffix) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (f *pqFile) openFooter(ctx context.Context, columns []string) (*arrow.Schema, error) {
	name := f.st.URL(f.key)
	ra, err := f.st.NewReaderAt(ctx, f.key)
	if err != nil {
		return nil, err
	}
	f.ra = ra
	rd, err := file.NewParquetReader(io.NewSectionReader(ra, 0, ra.Size()))
	if err != nil {
		return nil, fmt.Errorf("scan: %s: %w", name, err)
	}
	defer rd.Close()
	f.meta = rd.MetaData()
	fr, err := pqarrow.NewFileReader(rd, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("scan: %s: %w", name, err)
	}
	full, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("scan: %s: %w", name, err)
	}
	sc := f.meta.Schema
	if len(columns) == 0 {
		for i := range sc.NumColumns() {
			f.cols = append(f.cols, i)
		}
		f.perm = nil
		return full, nil
	}
	type pick struct{ leaf, want int }
	var picks []pick
	seen := map[int]bool{}
	for w, c := range columns {
		leaf := sc.ColumnIndexByName(c)
		if leaf < 0 {
			return nil, invalidf("scan: no column %q in %s (columns: %s)", c, name, columnList(full))
		}
		if seen[leaf] {
			return nil, invalidf("scan: column %q named twice", c)
		}
		seen[leaf] = true
		picks = append(picks, pick{leaf, w})
	}
	// pqarrow reads columns in file order; perm[w] is where asked-for
	// column w is in what it reads.
	byLeaf := make([]int, 0, len(picks))
	for _, p := range picks {
		byLeaf = append(byLeaf, p.leaf)
	}
	sortedLeaves := append([]int(nil), byLeaf...)
	slices.Sort(sortedLeaves)
	f.cols = sortedLeaves
	f.perm = make([]int, len(picks))
	fields := make([]arrow.Field, len(picks))
	for w, p := range picks {
		for k, l := range sortedLeaves {
			if l == p.leaf {
				f.perm[w] = k
			}
		}
		fi := full.FieldIndices(columns[w])
		if len(fi) == 0 {
			return nil, invalidf("scan: column %q of %s is nested; name a top-level column", columns[w], name)
		}
		fields[w] = full.Field(fi[0])
	}
	return arrow.NewSchema(fields, nil), nil
}

// pqTask is one row group; its batches go to out in order.
type pqTask struct {
	f   *pqFile
	rg  int
	out chan pqItem
}

type pqItem struct {
	rec arrow.RecordBatch
	err error
}

// pqSource decodes row groups on e.workers goroutines and hands their
// batches on in dataset order.
type pqSource struct {
	schema *arrow.Schema
	cancel context.CancelFunc
	wg     sync.WaitGroup
	order  chan *pqTask
	cur    *pqTask
	err    error
}

func newPQSource(ctx context.Context, e *env, files []*pqFile, schema *arrow.Schema, batch int) *pqSource {
	ctx, cancel := context.WithCancel(ctx)
	s := &pqSource{schema: schema, cancel: cancel, order: make(chan *pqTask, e.workers)}
	work := make(chan *pqTask)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(work)
		defer close(s.order)
		for _, f := range files {
			for rg := range f.meta.NumRowGroups() {
				t := &pqTask{f: f, rg: rg, out: make(chan pqItem, 2)}
				select {
				case s.order <- t:
				case <-ctx.Done():
					return
				}
				select {
				case work <- t:
				case <-ctx.Done():
					close(t.out)
					return
				}
			}
		}
	}()
	for range e.workers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for t := range work {
				t.run(ctx, e.mem, schema, batch)
				close(t.out)
			}
		}()
	}
	return s
}

func (t *pqTask) run(ctx context.Context, mem memory.Allocator, schema *arrow.Schema, batch int) {
	send := func(it pqItem) bool {
		select {
		case t.out <- it:
			return true
		case <-ctx.Done():
			if it.rec != nil {
				it.rec.Release()
			}
			return false
		}
	}
	name := t.f.st.URL(t.f.key)
	fail := func(err error) { send(pqItem{err: fmt.Errorf("scan: %s: row group %d: %w", name, t.rg, err)}) }
	rd, err := file.NewParquetReader(io.NewSectionReader(t.f.ra, 0, t.f.ra.Size()),
		file.WithMetadata(t.f.meta), file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		fail(err)
		return
	}
	defer rd.Close()
	props := pqarrow.ArrowReadProperties{BatchSize: int64(batch)}
	for _, leaf := range t.f.cols {
		// Columns the schema has as dictionaries (scan's ReadDict) are
		// read as such.
		if i := schema.FieldIndices(t.f.meta.Schema.Column(leaf).ColumnPath()[0]); len(i) > 0 && schema.Field(i[0]).Type.ID() == arrow.DICTIONARY {
			props.SetReadDict(leaf, true)
		}
	}
	fr, err := pqarrow.NewFileReader(rd, props, mem)
	if err != nil {
		fail(err)
		return
	}
	rr, err := fr.GetRecordReader(ctx, t.f.cols, []int{t.rg})
	if err != nil {
		fail(err)
		return
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		var out arrow.RecordBatch
		if t.f.perm == nil {
			rec.Retain()
			out = rec
		} else {
			cols := make([]arrow.Array, len(t.f.perm))
			for w, k := range t.f.perm {
				cols[w] = rec.Column(k)
			}
			out = array.NewRecordBatch(schema, cols, rec.NumRows())
		}
		if !send(pqItem{rec: out}) {
			return
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		fail(err)
	}
}

func (s *pqSource) Schema() *arrow.Schema { return s.schema }

func (s *pqSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if s.err != nil {
		return nil, s.err
	}
	for {
		if s.cur == nil {
			select {
			case t, ok := <-s.order:
				if !ok {
					s.err = io.EOF
					return nil, io.EOF
				}
				s.cur = t
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		select {
		case it, ok := <-s.cur.out:
			if !ok {
				s.cur = nil
				continue
			}
			if it.err != nil {
				s.err = it.err
				return nil, it.err
			}
			return it.rec, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (s *pqSource) Close() error {
	s.cancel()
	// Drain so every worker can finish, releasing what it made.
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	drain := func(t *pqTask) {
		for it := range t.out {
			if it.rec != nil {
				it.rec.Release()
			}
		}
	}
	if s.cur != nil {
		drain(s.cur)
	}
	for t := range s.order {
		drain(t)
	}
	<-done
	return nil
}
