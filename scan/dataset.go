package scan

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/internal/freelist"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/store"
)

// Options configure Open. The zero value scans every column of every row.
type Options struct {
	// Columns are the columns to read, by top-level name, in the order the
	// batches carry them; partition columns may be named too. nil means
	// every column (the files' columns, then the partition columns); an
	// empty non-nil slice means none (batches then carry only a row count).
	Columns []string
	// Used, when not nil, names the columns the reader of the batches
	// will look at; the others of Columns (of every column, when Columns
	// is nil) are not read, and the rest keep their order. A planner sets
	// it from what later stages read. When it names a column the batches
	// would not carry, it is ignored, so that the stage naming it reports
	// the column missing among all of them.
	Used []string
	// Filter keeps the rows for which it is true: an expression of
	// package expr over the dataset's columns (partition columns
	// included). Row groups whose statistics prove no row can satisfy it,
	// and files whose partition values cannot, are not read at all (see
	// expr.Expr.Conjuncts for what can be proved).
	Filter string
	// Prune is a filter used only to skip row groups and files, as
	// Filter does; the rows of those read are not filtered by it, since a
	// later stage evaluates it. A Prune that does not fit the dataset
	// (an unknown column, a wrong type) prunes nothing and is no error
	// here: the stage that evaluates it reports that.
	Prune string
	// BatchRows is the most rows in a batch. Default 64Ki.
	BatchRows int
	// Memory is the budget of one scan: the bytes fetched ahead of
	// decoding (see fetch.Options.Memory) and decoding's own working
	// memory (page buffers, batches being built, queued or held by the
	// consumer), estimated from the footers and kept out of what fetch
	// may hold. Default 512 MiB, of which, over a store whose fastest
	// footer read came back in under a millisecond (a local disk, memory),
	// where reading ahead hides no latency, fetch holds only the row
	// groups being decoded and one more. Small files read whole by their
	// footer read (see the package documentation) are kept for the scans,
	// up to an eighth of it (and 16 MiB), and fetch holds that much less. What the consumer keeps of the
	// batches it takes is its own.
	Memory int64
	// Mem allocates the batches and arrow-go's decoding buffers; nil means
	// memory.DefaultAllocator.
	Mem memory.Allocator
	// Concurrency is how many row groups are decoded at once. Default
	// GOMAXPROCS; fewer when their decoding would take more than three
	// quarters of Memory.
	Concurrency int
	// Fetcher, when set, is used instead of the dataset's own
	// fetch.Fetcher over the store (to share what it learned about the
	// link, and its pages, with other readers of the store); Memory is
	// then ignored in favour of its own budget.
	Fetcher *fetch.Fetcher
	// Progress, when set, is called with the bytes of each row group's
	// column chunks once it is decoded, from several goroutines at once.
	Progress func(bytes int64)
	// ReadDict names string and binary columns to read as dictionary
	// arrays (dictionary<int32, the column's type>, each batch with its
	// row group's dictionary) instead of one value per row: for columns
	// with few distinct values this skips copying every value out of the
	// Parquet dictionary. Columns of other types, partition columns and
	// columns the row filter reads are read as values.
	ReadDict []string
	// RowGroups, when set, limits the scan to the row groups for which it
	// returns true: key is the file's key in the store, rowGroup the row
	// group's index in that file (a range of them is a piece of a file
	// that another scan reads the rest of). Open calls it for each row
	// group of the files not pruned by partition; pruning by statistics
	// still applies to those it keeps. Positions keep the row groups'
	// indices in their files. An index a file does not have is never
	// asked about, so asking for one reads nothing rather than failing:
	// a caller that must know checks against File.RowGroups. Row groups it
	// leaves out are not counted in Stats, as read or as pruned.
	RowGroups func(key string, rowGroup int) bool
	// Ordered makes Scanner.Next deliver batches in dataset order (file,
	// row group, batch) rather than as they are decoded. A worker starts
	// a row group only when it is fewer than Concurrency row groups ahead
	// of the one being delivered, so what waits for a slow row group is
	// at most the batches of Concurrency row groups.
	Ordered bool
	// StoreOptions are the options OpenURL opens its store with (see
	// OpenURL for the defaults it fills in); Open ignores them.
	StoreOptions store.Options
	// FileColumns, when set, chooses Columns from the first file's schema
	// (its fields carry Parquet's field ids in their metadata, under
	// "PARQUET:field_id"), for a reader that names columns by something
	// other than their names in the files: an Iceberg table, whose
	// columns are field ids that a rename does not change. Used and the
	// filters still name the columns as the files do.
	FileColumns func(file *arrow.Schema) ([]string, error)
	// Int96Unit is the unit INT96 timestamps (Impala's and Spark's) are
	// read in: "ns" (the default, as arrow-go reads them: dates from 1677
	// to 2262), or a coarser "us", "ms" or "s" for files holding dates
	// beyond, as pyarrow's coerce_int96_timestamp_unit.
	Int96Unit string
	int96     arrow.TimeUnit // Int96Unit's
	// maxWhole is the largest file Open reads whole with its footer:
	// wholeFile, or none when negative (for tests of the reads after
	// Open).
	maxWhole int64
}

const (
	defaultBatchRows = 64 << 10
	defaultMemory    = 512 << 20
	footerReaders    = 32
	// Open keeps small files whole (see wholeFile) up to Memory/keepShare
	// and maxKeep of them: Open waits for those bytes before the first
	// batch, and 16 MiB is what fetch would first have in flight anyway
	// (its first window), so reading them with the footers moves them a
	// round trip earlier without holding up the start.
	keepShare = 8
	maxKeep   = 16 << 20
	// localTTFB is the footer latency under which a store counts as
	// local: fetching a row group takes less than decoding it, so there
	// is nothing to read far ahead for, and memory read ahead is memory
	// first touched for nothing (page faults are what these machines pay
	// most for).
	localTTFB = time.Millisecond
)

func (o Options) withDefaults() Options {
	if o.BatchRows <= 0 {
		o.BatchRows = defaultBatchRows
	}
	if o.Concurrency <= 0 {
		o.Concurrency = runtime.GOMAXPROCS(0)
	}
	if o.Memory <= 0 {
		o.Memory = defaultMemory
	}
	if o.Mem == nil {
		o.Mem = memory.DefaultAllocator
	}
	if o.maxWhole == 0 {
		o.maxWhole = wholeFile
	}
	o.int96 = arrow.Nanosecond
	switch o.Int96Unit {
	case "s":
		o.int96 = arrow.Second
	case "ms":
		o.int96 = arrow.Millisecond
	case "us":
		o.int96 = arrow.Microsecond
	}
	return o
}

// Dataset is a set of Parquet files whose footers have been read: its
// schema is known and the row groups to read are chosen. It may be
// scanned any number of times, concurrently; its scans share one
// fetch.Fetcher, whose page pool (at most Options.Memory) stays allocated
// while the Dataset is reachable.
type Dataset struct {
	st      *store.Store
	owned   bool // st was opened by OpenURL, and Close closes it
	pattern string
	opts    Options
	// fetcher serves every scan of the dataset, so a second scan starts
	// from what the first learned about the link and reuses its pages.
	fetcher *fetch.Fetcher

	files  []*fileInfo
	groups []*group    // to read, in dataset order
	mem    memEstimate // over groups

	schema   *arrow.Schema   // what batches carry
	fileCols []string        // output columns that come from the files
	readDict map[string]bool // output columns read as dictionaries
	parts    []partCol
	conds    []boundCond // what the filters say about single columns
	// filter is the row filter, bound to filterSchema: its columns as
	// decoded (dictionaries where read so) and partition columns.
	filter       *expr.Expr
	filterSchema *arrow.Schema
	filterCols   []filterCol
	filterMem    freelist.List[expr.Scratch] // each decoder's evaluation memory
	filterRuns   freelist.List[[]rowRun]     // and the runs of rows it keeps

	open openStats
}

// fileInfo is one file of the dataset.
type fileInfo struct {
	index    int
	key, url string
	size     int64
	etag     string
	md       *metadata.FileMetaData
	// decodeMD, when set, is what arrow-go decodes from: md with INT96
	// columns as 12-byte binary, for Options.Int96Unit (int96.go).
	decodeMD *metadata.FileMetaData
	footer   int64 // footer bytes: metadata, length and magic
	// data is the whole file, when it was small enough for its footer
	// read to take it in (footerReader.read): its row groups are given
	// to fetch rather than requested again.
	data   []byte
	parts  []partVal
	leaves []int // leaf columns to decode, ascending
	pruned bool  // by a partition value
}

// group is one row group to read: one fetch request, decoded as a unit.
type group struct {
	file   *fileInfo
	rg     int
	rows   int64
	ranges []store.Range // the column chunks of the leaves, as arrow-go reads them
	merged []store.Range
	bytes  int64
	// batchRows is Options.BatchRows, or fewer where the row group's
	// strings would not fit one Arrow batch (binaryBatchRows); pageLimit
	// and packedLimit are the largest page arrow-go may read
	// (pageLimits).
	batchRows              int64
	pageLimit, packedLimit int64
}

type openStats struct {
	elapsed                    time.Duration
	listed                     int
	footerReads, footerBytes   int64
	footerNeeded               int64
	rowGroups, rowGroupsPruned int
	filesPruned                int
	bytesNeeded                int64
}

// File describes one file of a dataset.
type File struct {
	Key       string
	URL       string
	Size      int64
	Rows      int64
	RowGroups int
	// Pruned is true when the filter excludes the whole file by its
	// partition values.
	Pruned bool
}

// Open lists the files pattern names in st, reads their footers
// (concurrently, one suffix read each), works out the schema, and chooses
// the row groups to read. pattern is a key in st: one object, a prefix
// (every *.parquet object under it), or a glob; see the package
// documentation.
func Open(ctx context.Context, st *store.Store, pattern string, opts Options) (*Dataset, error) {
	start := time.Now()
	if opts.Filter != "" {
		// A malformed filter fails before anything is read.
		if _, err := expr.Parse(opts.Filter); err != nil {
			return nil, fmt.Errorf("scan: filter %w", err)
		}
	}
	var root string
	var objs []store.ObjectInfo
	err := policy.Do(ctx, func() (err error) {
		root, objs, err = listFiles(ctx, st, pattern)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, &NoFilesError{URL: st.URL(pattern)}
	}
	return open(ctx, st, pattern, root, objs, opts, start)
}

// OpenObject is Open of one object whose size the caller knows (a table
// format's manifest names its data files with their sizes): nothing is
// listed, so the first request made for it is its footer's, a round trip
// less than Open of its key.
func OpenObject(ctx context.Context, st *store.Store, o store.ObjectInfo, opts Options) (*Dataset, error) {
	if opts.Filter != "" {
		if _, err := expr.Parse(opts.Filter); err != nil {
			return nil, fmt.Errorf("scan: filter %w", err)
		}
	}
	return open(ctx, st, o.Key, o.Key[:strings.LastIndex(o.Key, "/")+1], []store.ObjectInfo{o}, opts, time.Now())
}

// open is Open once the objects are known, root being where their
// partition directories (k=v/) start.
func open(ctx context.Context, st *store.Store, pattern, root string, objs []store.ObjectInfo, opts Options, start time.Time) (*Dataset, error) {
	memoryDefault := opts.Memory <= 0
	opts = opts.withDefaults()
	d := &Dataset{st: st, pattern: pattern, opts: opts, fetcher: opts.Fetcher}
	d.open.listed = len(objs)
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	parts, vals, err := partitions(root, keys, st.URL)
	if err != nil {
		return nil, err
	}
	d.parts = parts

	fr := newFooterReader(st)
	fr.int96 = opts.int96 != arrow.Nanosecond
	fr.keep.Store(min(opts.Memory/keepShare, maxKeep))
	fr.maxWhole = opts.maxWhole
	d.files = make([]*fileInfo, len(objs))
	errs := make([]error, len(objs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(footerReaders)
	for i, o := range objs {
		f := &fileInfo{index: i, key: o.Key, url: st.URL(o.Key), parts: vals[i]}
		d.files[i] = f
		g.Go(func() error {
			ft, err := fr.read(gctx, o.Key, o.Size)
			if err != nil {
				errs[i] = fileError(f.url, err)
				return errs[i]
			}
			f.md, f.size, f.etag, f.footer = ft.md, ft.info.Size, ft.info.ETag, ft.len
			f.decodeMD, f.data = ft.decodeMD, ft.data
			return nil
		})
	}
	gerr := g.Wait()
	d.open.footerReads, d.open.footerBytes = fr.reads.Load(), fr.bytes.Load()
	if gerr != nil {
		return nil, firstError(ctx, errs, gerr)
	}
	if err := d.resolveSchema(opts.Columns); err != nil {
		return nil, err
	}
	if err := d.choose(); err != nil {
		return nil, err
	}
	if d.fetcher == nil {
		// The footer reads measured the link's first-byte latency: the
		// fetcher starts from it, rather than from an instance next to S3,
		// so its first units coalesce as the link deserves (a local disk
		// reads no holes through, S3 reads through a megabyte).
		fetchMem := d.fetchMemory()
		if memoryDefault && fr.reads.Load() > 0 && fr.minTTFB() < localTTFB {
			fetchMem = min(fetchMem, d.localFetchMemory())
		}
		// The small files kept whole come out of what fetch may hold.
		fetchMem = max(fetchMem-fr.kept.Load(), fetchMem/2)
		// Fetched bytes come from the scan's pool when it is one, so a
		// command's mapped pool backs them with huge pages too.
		pool, _ := opts.Mem.(*mempool.Pool)
		d.fetcher = fetch.New(st, fetch.Options{Memory: fetchMem, TTFB: fr.medianTTFB(), Mem: pool})
	}
	d.open.elapsed = time.Since(start)
	return d, nil
}

// firstError is the error of the first file in dataset order, preferring
// a real failure to the cancellations it caused in the others.
func firstError(ctx context.Context, errs []error, fallback error) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return fallback
}

// arrowSchema converts a file's Parquet schema the way pqarrow does,
// turning a panic on a malformed schema into an error.
func (d *Dataset) arrowSchema(md *metadata.FileMetaData) (sc *arrow.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			sc, err = nil, fmt.Errorf("unsupported or corrupt schema: %v", r)
		}
	}()
	sc, err = pqarrow.FromParquet(md.Schema, &pqarrow.ArrowReadProperties{}, md.KeyValueMetadata())
	if err == nil && d.opts.int96 != arrow.Nanosecond {
		sc = withInt96Unit(md, sc, d.opts.int96)
	}
	return sc, err
}

// resolveSchema builds the dataset schema from the first file and the
// partition columns, checks the projection and the filter against it,
// and checks every other file has the columns needed with the same types.
// keepUsed returns the fields of out that used names, in out's order, or
// out when used names one it lacks.
func keepUsed(out []arrow.Field, used []string) []arrow.Field {
	has := make(map[string]bool, len(out))
	for _, f := range out {
		has[f.Name] = true
	}
	keep := make(map[string]bool, len(used))
	for _, name := range used {
		if !has[name] {
			return out
		}
		keep[name] = true
	}
	kept := []arrow.Field{}
	for _, f := range out {
		if keep[f.Name] {
			kept = append(kept, f)
		}
	}
	return kept
}

func (d *Dataset) resolveSchema(columns []string) error {
	first := d.files[0]
	fsc, err := d.arrowSchema(first.md)
	if err != nil {
		return fileError(first.url, err)
	}
	if d.opts.FileColumns != nil {
		if columns, err = d.opts.FileColumns(fsc); err != nil {
			return fileError(first.url, err)
		}
	}
	fields := append([]arrow.Field(nil), fsc.Fields()...)
	for _, p := range d.parts {
		if fsc.HasField(p.name) {
			return fmt.Errorf("scan %s: partition directory %s=… names a column the files already have", d.st.URL(d.pattern), p.name)
		}
		fields = append(fields, arrow.Field{Name: p.name, Type: p.typ, Nullable: true})
	}
	full := arrow.NewSchema(fields, nil)
	isPart := func(name string) bool {
		for _, p := range d.parts {
			if p.name == name {
				return true
			}
		}
		return false
	}

	// The output schema, in the order asked for.
	var out []arrow.Field
	if columns == nil {
		out = fields
	} else {
		seen := map[string]bool{}
		for _, c := range columns {
			if seen[c] {
				return fmt.Errorf("scan: column %s asked for twice", expr.QuoteName(c))
			}
			seen[c] = true
			idx := full.FieldIndices(c)
			if len(idx) == 0 {
				return fmt.Errorf("scan %s: %w", d.st.URL(d.pattern), &expr.ColumnError{Column: c, Have: fieldNames(full)})
			}
			out = append(out, full.Field(idx[0]))
		}
	}
	if used := d.opts.Used; used != nil {
		out = keepUsed(out, used)
	}
	var filter *expr.Expr
	if d.opts.Filter != "" {
		if filter, err = expr.CompileFilter(d.opts.Filter, full); err != nil {
			return fmt.Errorf("scan %s: filter %w", d.st.URL(d.pattern), err)
		}
		d.conds = bindConds(filter.Conjuncts(), full, d.parts)
	}
	if d.opts.Prune != "" {
		if prune, err := expr.CompileFilter(d.opts.Prune, full); err == nil {
			d.conds = append(d.conds, bindConds(prune.Conjuncts(), full, d.parts)...)
		}
	}
	d.readDict = map[string]bool{}
	for _, name := range d.opts.ReadDict {
		d.readDict[name] = !isPart(name)
	}
	out = append([]arrow.Field(nil), out...) // it may be fields, which full shares
	for i, f := range out {
		if !d.readDict[f.Name] {
			continue
		}
		switch f.Type.ID() {
		case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
			out[i].Type = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: f.Type}
		default:
			d.readDict[f.Name] = false
		}
	}
	meta := fsc.Metadata()
	d.schema = arrow.NewSchema(out, &meta)
	// The columns each file must have: the projected ones and those the
	// row filter reads.
	need := map[string]bool{}
	var needOrder []string
	add := func(name string) {
		if !need[name] && !isPart(name) {
			need[name] = true
			needOrder = append(needOrder, name)
		}
	}
	for _, f := range out {
		add(f.Name)
		if !isPart(f.Name) {
			d.fileCols = append(d.fileCols, f.Name)
		}
	}
	if filter != nil {
		if err := d.bindFilter(filter, full, add); err != nil {
			return err
		}
	}
	want := map[string]arrow.DataType{}
	for _, name := range needOrder {
		want[name] = fsc.Field(fsc.FieldIndices(name)[0]).Type
	}
	for _, f := range d.files {
		sc := fsc
		if f != first {
			if sc, err = d.arrowSchema(f.md); err != nil {
				return fileError(f.url, err)
			}
		}
		for _, name := range needOrder {
			idx := sc.FieldIndices(name)
			if len(idx) == 0 {
				return fileError(f.url, fmt.Errorf("no column %s, which %s has", expr.QuoteName(name), first.url))
			}
			if t := sc.Field(idx[0]).Type; !arrow.TypeEqual(t, want[name]) {
				return fileError(f.url, fmt.Errorf("column %s is %s, but %s in %s", expr.QuoteName(name), t, want[name], first.url))
			}
		}
		f.leaves = leavesOf(f.md, need)
		f.pruned = d.partitionsExclude(f)
	}
	return nil
}

// partitionsExclude reports whether the file's partition values alone
// prove the filters keep none of its rows.
func (d *Dataset) partitionsExclude(f *fileInfo) bool {
	for _, c := range d.conds {
		holds := false
		for _, t := range c {
			if t.part < 0 || partHolds(t, f.parts[t.part]) {
				holds = true
				break
			}
		}
		if !holds {
			return true
		}
	}
	return false
}

// filterCol is a column the row filter reads: one the files have, or a
// partition column.
type filterCol struct {
	name string
	part int // index of the partition column, or -1
}

// bindFilter binds the row filter to the columns it reads as they will
// be decoded, and adds the files' columns among them to what is read.
func (d *Dataset) bindFilter(filter *expr.Expr, full *arrow.Schema, add func(string)) error {
	var fields []arrow.Field
	for _, i := range filter.Columns() {
		f := full.Field(i)
		fc := filterCol{name: f.Name, part: d.partIndex(f.Name)}
		if fc.part < 0 {
			add(f.Name)
			if id := f.Type.ID(); d.readDict[f.Name] && (id == arrow.STRING || id == arrow.BINARY || id == arrow.LARGE_STRING || id == arrow.LARGE_BINARY) {
				f.Type = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: f.Type}
			}
		}
		d.filterCols = append(d.filterCols, fc)
		fields = append(fields, f)
	}
	d.filterSchema = arrow.NewSchema(fields, nil)
	n, err := expr.Parse(d.opts.Filter)
	if err == nil {
		d.filter, err = expr.Bind(d.opts.Filter, n, d.filterSchema)
	}
	return err
}

func fieldNames(sc *arrow.Schema) []string {
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	return names
}

// leavesOf lists the leaf columns under the named top-level columns.
func leavesOf(md *metadata.FileMetaData, names map[string]bool) []int {
	var out []int
	for i := 0; i < md.Schema.NumColumns(); i++ {
		if names[md.Schema.Column(i).ColumnPath()[0]] {
			out = append(out, i)
		}
	}
	return out
}

// choose prunes row groups by statistics and works out the ranges of
// those left.
func (d *Dataset) choose() error {
	for _, f := range d.files {
		d.open.footerNeeded += f.footer
		n := f.md.NumRowGroups()
		if f.pruned {
			d.open.filesPruned++
			d.open.rowGroupsPruned += n
			continue
		}
		for i := 0; i < n; i++ {
			if d.opts.RowGroups != nil && !d.opts.RowGroups(f.key, i) {
				continue
			}
			rg := f.md.RowGroup(i)
			if rg.NumRows() == 0 {
				continue
			}
			excluded := false
			for _, c := range d.conds {
				if condExcluded(c, f, rg) {
					excluded = true
					break
				}
			}
			if excluded {
				d.open.rowGroupsPruned++
				continue
			}
			g := &group{file: f, rg: i, rows: rg.NumRows()}
			for _, leaf := range f.leaves {
				r, err := chunkRange(f.md, rg, leaf)
				if err == nil {
					err = checkCodec(rg, leaf)
				}
				if err != nil {
					return fileError(f.url, fmt.Errorf("row group %d: %w", i, err))
				}
				g.ranges = append(g.ranges, r)
				g.bytes += r.Len
			}
			g.merged = mergeRanges(g.ranges)
			g.batchRows = binaryBatchRows(rg, f.leaves, int64(d.opts.BatchRows))
			g.pageLimit, g.packedLimit = pageLimits(rg, f.leaves)
			pages, batch := decodeMemory(f.md, rg, f.leaves, g.batchRows)
			d.mem.pages, d.mem.batch = max(d.mem.pages, pages), max(d.mem.batch, batch)
			d.mem.unit = max(d.mem.unit, g.bytes)
			d.mem.batches = max(d.mem.batches, (rg.NumRows()+g.batchRows-1)/max(g.batchRows, 1))
			d.groups = append(d.groups, g)
			d.open.rowGroups++
			d.open.bytesNeeded += g.bytes
		}
	}
	return nil
}

// Schema is the schema of every batch the dataset's scans produce.
func (d *Dataset) Schema() *arrow.Schema { return d.schema }

// Files describes the dataset's files, in dataset (key) order.
func (d *Dataset) Files() []File {
	out := make([]File, len(d.files))
	for i, f := range d.files {
		out[i] = File{Key: f.key, URL: f.url, Size: f.size, Rows: f.md.GetNumRows(), RowGroups: f.md.NumRowGroups(), Pruned: f.pruned}
	}
	return out
}

// RowGroups is the number of row groups a scan reads (after pruning).
func (d *Dataset) RowGroups() int { return len(d.groups) }

// BytesNeeded is what a scan must read: the column chunks of the row
// groups it reads (as arrow-go reads them).
func (d *Dataset) BytesNeeded() int64 { return d.open.bytesNeeded }

// RowGroup is one row group a scan reads.
type RowGroup struct {
	File  int // index in Files
	Index int // in the file
	Rows  int64
	// Start is the index in its file of the row group's first row.
	Start int64
	// Bytes are its column chunks a scan reads (see BytesNeeded).
	Bytes int64
}

// Plan lists the row groups a scan reads, in dataset order, so a caller
// can cut the dataset into pieces of similar size (see Options.RowGroups).
func (d *Dataset) Plan() []RowGroup {
	out := make([]RowGroup, len(d.groups))
	// Each file's row groups' first rows, summed once a file.
	starts := map[*fileInfo][]int64{}
	for i, g := range d.groups {
		st, ok := starts[g.file]
		if !ok {
			st = make([]int64, g.file.md.NumRowGroups())
			for j := 1; j < len(st); j++ {
				st[j] = st[j-1] + g.file.md.RowGroup(j-1).NumRows()
			}
			starts[g.file] = st
		}
		out[i] = RowGroup{File: g.file.index, Index: g.rg, Rows: g.rows, Bytes: g.bytes, Start: st[g.rg]}
	}
	return out
}
