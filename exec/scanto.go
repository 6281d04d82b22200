package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// defaultScanMemory is ScanTo's budget when ScanToOptions.Memory is zero.
const defaultScanMemory = 512 << 20

// ScanToOptions configure ScanTo.
type ScanToOptions struct {
	// Columns, Filter, BatchRows, Concurrency, Dict and Int96Unit are
	// those of ScanOptions.
	Columns     []string
	Filter      string
	BatchRows   int
	Concurrency int
	Dict        []string
	Int96Unit   string
	// Snapshot and AsOf choose an Iceberg table's snapshot (see
	// ScanOptions).
	Snapshot int64
	AsOf     time.Time
	// Catalog is ScanOptions.Catalog.
	Catalog string
	// Memory is the whole budget: the scan's, what the pool keeps, and
	// what the output holds (a Parquet row group being encoded, an
	// upload's parts); zero means defaultScanMemory. When reading one row
	// group of the dataset takes more, it is raised to that (see Raised).
	Memory int64
	// Arrival writes batches as they are decoded rather than in dataset
	// order. An Arrow IPC stream then carries each batch's Position in its
	// metadata; an Arrow IPC file stores them as they come and lists them
	// in dataset order.
	Arrival bool

	// Output is where the batches go: "" counts them only, "-" writes
	// them to Stdout, anything else is a path or URL opened with
	// OpenOutput, where nothing appears unless the whole scan succeeds.
	Output string
	// Format is the output's format name (format.Choose); empty means
	// the one Output's suffix names, an Arrow IPC stream for "-".
	Format string
	// Write are the output's format options. For Parquet, ScanTo sets
	// RowGroupBytes and DictPageBytes from the budget; for s3://,
	// UploadMemory.
	Write format.Options
	// Stdout is where Output "-" writes.
	Stdout io.Writer
	// HandOff is streamOptions.HandOff for an Arrow IPC stream on Stdout.
	HandOff bool

	// Open opens the dataset for Parquet reading. scan retries each read,
	// so a store making one attempt per request suits.
	Open store.Opener
	// OpenWhole opens URLs that hold no Parquet, whose objects are read
	// whole (Arrow IPC, CSV, JSON lines, told by content); nil means Open.
	OpenWhole store.Opener
	// OpenOutput opens Output when it is a path or URL.
	OpenOutput store.Opener
	// The stores the openers return are the caller's to close, after
	// ScanTo returns.

	// Mem allocates the batches; nil means a reusing pool (package
	// mempool) within the budget.
	Mem memory.Allocator

	// Raised, when set, is called with the budget reading one row group
	// takes when that is more than Memory.
	Raised func(need int64)
	// BoundHeap, when set, is called with the final budget before reading
	// starts (to bound the process's heap, say); what it returns is
	// called when ScanTo returns.
	BoundHeap func(budget int64) (restore func())
	// Started, when set, is called with the bytes a Parquet scan will read
	// once its plan is known; Progress with each row group's bytes as it
	// is decoded (from several goroutines at once); Done when reading has
	// ended, before the output is committed.
	Started  func(total int64)
	Progress func(n int64)
	Done     func()
}

// ScanResult is what ScanTo read.
type ScanResult struct {
	// Rows is the number of rows read.
	Rows int64
	// Whole says the URL held no Parquet and its objects were read whole
	// (no row groups to skip); Batches is then the number of batches and
	// Stats is zero.
	Whole   bool
	Batches int64
	// Stats are the Parquet scan's figures.
	Stats scan.Stats
}

// ScanTo reads the dataset url names (a Parquet file, prefix or glob; or,
// where there is no Parquet, objects in any format format recognises,
// read whole) and writes its batches to opts.Output, or only counts them.
// Mistakes in the options wrap ErrInvalid. On error the output is
// abandoned: an object is not committed, and a stream is left without
// its end so that its reader sees an error; a reader of Stdout that
// stopped early shows as an error wrapping syscall.EPIPE.
func ScanTo(ctx context.Context, url string, opts ScanToOptions) (ScanResult, error) {
	budget := opts.Memory
	if budget == 0 {
		budget = defaultScanMemory
	}
	sink, err := newScanSink(opts)
	if err != nil {
		return ScanResult{}, err
	}
	if iceberg.IsMetadataURL(url) || opts.Catalog != "" {
		return scanWhole(ctx, url, opts, sink, true)
	}
	base, rest := store.SplitGlob(url)
	st, key, err := opts.Open(ctx, base)
	if err != nil {
		return ScanResult{}, err
	}
	key += rest
	// Released buffers are reused rather than left to the collector:
	// fresh pages cost more than decoding them, and garbage would make the
	// heap outgrow the budget. What the pool keeps is part of the budget.
	// Mapped: its fresh memory, and the fetched bytes' (scan hands the
	// pool to its fetcher), come in huge pages where the system has them.
	// The fetcher's pages come back to the pool too, within the fetch
	// share of the budget, so the pool may keep that share on top.
	keep := min(budget/8, 32<<20)
	mem := opts.Mem
	if mem == nil {
		mem = mempool.NewMapped(budget)
	}
	// What the output holds comes out of the budget too, so that the
	// whole process stays within it (plus the runtime's own): a Parquet
	// row group is held, encoded, until it is full; an upload to S3 holds
	// its parts in flight and the one filling (a file is written as it
	// comes).
	var writeShare, uploadShare int64
	if sink.f == format.Parquet {
		writeShare = budget / 4
		sink.wopts.RowGroupBytes, sink.wopts.DictPageBytes = parquetShares(writeShare)
	}
	if strings.HasPrefix(opts.Output, "s3://") {
		uploadShare = min(budget/4, 32<<20)
		sink.wopts.UploadMemory = uploadShare
	}
	so := scan.Options{
		Columns:     opts.Columns,
		Filter:      opts.Filter,
		BatchRows:   opts.BatchRows,
		Memory:      budget - keep - writeShare - uploadShare,
		Concurrency: opts.Concurrency,
		ReadDict:    opts.Dict,
		Mem:         mem,
		Progress:    opts.Progress,
		Int96Unit:   opts.Int96Unit,
		// The order a pipeline's scan gives, so that stages reading the
		// output see the batches they see fused.
		Ordered: !opts.Arrival,
	}
	ds, err := scan.Open(ctx, st, key, so)
	var nf *scan.NoFilesError
	var it *scan.IcebergTableError
	switch {
	case errors.As(err, &it):
		return scanWhole(ctx, url, opts, sink, true)
	case opts.Snapshot != 0 || !opts.AsOf.IsZero():
		if err == nil {
			ds.Close()
		}
		return ScanResult{}, invalidf("scan %s: --snapshot and --as-of choose the snapshot of an Iceberg table, and this is not one", url)
	case errors.As(err, &nf) || errors.Is(err, scan.ErrNotParquet):
		return scanWhole(ctx, url, opts, sink, false)
	case err != nil:
		return ScanResult{}, err
	}
	if err := checkDict(ds.Schema(), opts.Dict); err != nil {
		return ScanResult{}, err
	}
	if need := ds.MinMemory() + keep + writeShare + uploadShare; need > budget {
		if opts.Raised != nil {
			opts.Raised(need)
		}
		budget = need
	}
	if opts.BoundHeap != nil {
		defer opts.BoundHeap(budget)()
	}
	if opts.Arrival && sink.f == format.IPCStream {
		sink.positionsOf(ds.Plan())
	}
	if err := sink.open(ctx, ds.Schema()); err != nil {
		return ScanResult{}, err
	}
	if opts.Started != nil {
		opts.Started(ds.BytesNeeded())
	}
	s := ds.Scan(ctx)
	err = func() error {
		defer s.Close()
		for s.Next() {
			b := s.Batch()
			err := sink.write(b.RecordBatch, b.Pos)
			b.Release()
			if err != nil {
				return err
			}
		}
		return s.Err()
	}()
	res := ScanResult{Stats: s.Stats()}
	res.Rows = res.Stats.Rows
	if opts.Done != nil {
		opts.Done()
	}
	if err == nil {
		err = sink.close()
	}
	if err != nil {
		sink.abort()
		return ScanResult{}, err
	}
	return res, nil
}

// scanWhole is ScanTo of objects that are not Parquet (Arrow IPC, CSV,
// JSON lines: Scan tells them by content): read whole, with the columns
// and the filter applied to the rows.
func scanWhole(ctx context.Context, url string, opts ScanToOptions, sink *scanSink, table bool) (ScanResult, error) {
	open := opts.OpenWhole
	if open == nil || table {
		open = opts.Open
	}
	so := ScanOptions{Columns: opts.Columns, Filter: opts.Filter, BatchRows: opts.BatchRows, Dict: opts.Dict, Open: open}
	var res ScanResult
	if table {
		so.Snapshot, so.AsOf, so.Concurrency, so.Int96Unit, so.Catalog = opts.Snapshot, opts.AsOf, opts.Concurrency, opts.Int96Unit, opts.Catalog
		so.Memory = opts.Memory
		so.Stats = func(_ string, st scan.Stats) { res.Stats = st }
	}
	src := Scan([]string{url}, so)
	mem := opts.Mem
	if mem == nil {
		mem = mempool.NewMapped(0)
	}
	res.Whole = !table
	var openErr error // Collect's schema callback has no error to return
	collect := Collect(func(sc *arrow.Schema) {
		openErr = sink.open(ctx, sc)
	}, func(rec arrow.RecordBatch) error {
		if openErr != nil {
			return openErr
		}
		res.Rows += rec.NumRows()
		res.Batches++
		return sink.write(rec, scan.Position{Batch: int(res.Batches)})
	})
	err := Run(ctx, Pipeline{Source: src, Stages: []Stage{collect}}, Options{Open: open, Mem: mem})
	if err == nil {
		err = openErr
	}
	if err == nil {
		err = sink.close()
	}
	if err != nil {
		sink.abort()
		return ScanResult{}, err
	}
	return res, nil
}

// parquetShares splits what a Parquet output may hold into the Arrow bytes
// of a row group and the size of a column's dictionary. The encoders hold
// several times the Arrow bytes given to their row group (pages, the
// batches queued per column, the values being encoded): measured about
// four times on lineitem. A dictionary's hash table of the values seen
// grows with the dictionary, to some 30 MiB over lineitem's 64-bit
// columns at arrow-go's 1 MiB limit, so a small share wants a small
// dictionary (a column past it falls back to plain encoding).
func parquetShares(share int64) (rowGroupBytes, dictBytes int64) {
	return share / 4, min(max(share/512, 64<<10), 1<<20)
}

// scanSink is where ScanTo's batches go: nowhere (only counted), standard
// output, or an object committed on close (package format).
type scanSink struct {
	opts  *ScanToOptions
	dest  string // "" to count, "-" for stdout
	f     format.Format
	wopts format.Options
	w     scanWriter
	obj   *format.Object
	// groups numbers the row groups read in dataset order, when each
	// batch of a stream in arrival order carries its Position.
	groups map[[2]int]int64
}

// scanWriter is an output's writer: a format's, or a streamWriter (which
// hands batches to a sluice stage reading the pipe through shared
// memory).
type scanWriter interface {
	Write(arrow.RecordBatch) error
	Close() error
	Abort()
}

func newScanSink(opts ScanToOptions) (*scanSink, error) {
	s := &scanSink{opts: &opts, dest: opts.Output, wopts: opts.Write}
	if s.dest == "" {
		if opts.Format != "" {
			return nil, invalidf("--format %s: without -o nothing is written", opts.Format)
		}
		return s, nil
	}
	if s.dest == os.DevNull {
		// Written and thrown away (to time a scan with its encoding), as
		// a stream: never to a temporary name renamed over the device.
		s.dest = "-"
		s.opts.Stdout, s.opts.HandOff = io.Discard, false
		if opts.Format == "" {
			s.f = format.IPCStream
			return s, nil
		}
	}
	f, err := format.Choose(s.dest, opts.Format)
	if err != nil {
		return nil, invalidf("-o %s: %v", opts.Output, err)
	}
	s.f = f
	return s, nil
}

// positionsOf makes the sink tag each batch with its place among the row
// groups plan lists, so that a sluice stage reading the stream can
// restore dataset order (PositionKey).
func (s *scanSink) positionsOf(plan []scan.RowGroup) {
	s.groups = make(map[[2]int]int64, len(plan))
	for i, rg := range plan {
		s.groups[[2]int{rg.File, rg.Index}] = int64(i)
	}
}

func (s *scanSink) counting() bool { return s.dest == "" }

// open starts the output.
func (s *scanSink) open(ctx context.Context, sc *arrow.Schema) error {
	if s.counting() {
		return nil
	}
	var err error
	if s.dest == "-" && s.f == format.IPCStream {
		s.w = newStreamWriter(s.opts.Stdout, sc, streamOptions{HandOff: s.opts.HandOff})
		return nil
	}
	if s.dest == "-" {
		s.w, err = format.NewWriterOptions(s.opts.Stdout, s.f, sc, memory.DefaultAllocator, s.wopts)
		if err != nil {
			return invalidf("-o -: %v", err)
		}
		return nil
	}
	st, key, err := s.opts.OpenOutput(ctx, s.dest)
	if err != nil {
		return err
	}
	s.obj, err = format.CreateOptions(ctx, st, key, s.f, sc, memory.DefaultAllocator, s.wopts)
	if err != nil {
		var ne *format.NotObjectError
		if errors.As(err, &ne) {
			return invalidf("-o %s: names a directory, not a file", s.dest)
		}
		var se *store.Error
		if errors.As(err, &se) {
			return err
		}
		return invalidf("-o %s: %v", s.dest, err)
	}
	s.w = s.obj.Writer
	return nil
}

func (s *scanSink) write(rec arrow.RecordBatch, pos scan.Position) error {
	// An empty last batch of a row group still says where it ends.
	if s.counting() || rec.NumRows() == 0 && (s.groups == nil || !pos.Last) {
		return nil
	}
	var err error
	switch {
	case s.groups != nil:
		g, ok := s.groups[[2]int{pos.File, pos.RowGroup}]
		if !ok {
			return fmt.Errorf("scan: row group %d of %s is not in the scan's plan", pos.RowGroup, pos.Key)
		}
		tagged := WithPosition(rec, Position{Group: g, Batch: int64(pos.Batch), Last: pos.Last, File: pos.File, RowGroup: pos.RowGroup})
		err = s.w.Write(tagged)
		tagged.Release()
	case s.f.Ordered():
		// Stored as decoded, listed in dataset order.
		err = s.w.(*format.Writer).WriteAt(rec, format.Key{int64(pos.File), int64(pos.RowGroup), int64(pos.Batch)})
	default:
		err = s.w.Write(rec)
	}
	if err != nil {
		return s.writeError(err)
	}
	return nil
}

func (s *scanSink) writeError(err error) error {
	if s.dest == "-" {
		return fmt.Errorf("write output: %w", err)
	}
	var se *store.Error
	if errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("write %s: %w", s.dest, err)
}

// close finishes the format and commits the destination.
func (s *scanSink) close() error {
	if s.w == nil {
		return nil
	}
	var err error
	if s.obj != nil {
		err = s.obj.Close()
	} else {
		err = s.w.Close()
	}
	s.w, s.obj = nil, nil
	if err != nil {
		return s.writeError(err)
	}
	return nil
}

// abort discards a destination in a store. A stream on stdout is left
// without its ending, so a reader sees an error rather than a short
// output that looks complete.
func (s *scanSink) abort() {
	if s.w == nil {
		return
	}
	if s.obj != nil {
		s.obj.Abort()
	} else {
		s.w.Abort()
	}
	s.w, s.obj = nil, nil
}
