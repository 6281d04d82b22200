package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/internal/size"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

func newScanCommand() *cobra.Command {
	var opts scanFlags
	cmd := &cobra.Command{
		Use:   "scan URL",
		Short: "Read a Parquet dataset into Arrow: count it, or write it as Arrow IPC or Parquet",
		Long: `Read a Parquet dataset at network speed: footers in one request per file, only
the column chunks --columns needs, row groups --filter excludes skipped by
their statistics, many ranged GETs in flight, and decoding on every core.

URL is one file, a prefix (every *.parquet object under it, skipping names
starting with _ or . such as _SUCCESS), or a glob (s3://b/t/*.parquet; *
does not cross a /). Directories named key=value below it become columns.
Where there is no Parquet, the objects are read whole in whatever format
their content shows (Arrow IPC file or stream, CSV, JSON lines), with
--columns and --filter applied to the rows: sluice scan q.arrow reads back
what sluice scan -o q.arrow wrote.

--filter takes an expression in the language of sluice filter (see its
--help): comparisons, and/or/not, in, between, like, is null, arithmetic,
date 'YYYY-MM-DD' and interval 'N' day; a quoted string compared with a
date or timestamp column is read as one (l_shipdate <= '1998-09-02'). A
comparison with null never holds. What its top-level "and" terms say of
single columns skips row groups by their statistics.

With no -o, scan reads everything and prints the number of rows. -o writes
the batches in the format --format names or, without it, NAME's suffix does:
  NAME.arrow     an Arrow IPC file (also .feather, .ipc), read in dataset
                 order (with --order arrival the batches are stored as they
                 are decoded and listed in dataset order in its footer)
  NAME.arrows    an Arrow IPC stream, in --order
  NAME.parquet   a Parquet file (also .pq; --compression, snappy by
                 default), its columns encoded in parallel, uploaded in
                 parts as it is written, in --order; a row group holds
                 at most --row-group-rows rows and a quarter of --memory
  NAME.csv       CSV with a header line, in --order
  NAME.jsonl     JSON lines (also .ndjson), one object a row, in --order
  -              an Arrow IPC stream on standard output (or --format's), in --order
--order dataset (the default) writes batches in dataset order (file, row
group, batch), decoding --concurrency row groups at once and holding the
batches of those ahead of a slow one: every run writes the same stream, and
stages piped after it give the bits sluice run gives.
--order arrival writes batches as they are decoded: no waiting behind a slow
row group. An Arrow IPC stream (- or .arrows) then carries each batch's
place in the dataset in its metadata (key sluice.position, e.g.
{"group":5,"batch":0,"last":true,"file":1,"row_group":2}; a group is a row
group read, numbered in dataset order): per-batch stages piped after it
(select, filter...) pass it on, and the stages whose results depend on
order (head, top, sort, sums, write...) restore dataset order from it
first, so they give sluice run's bits too.
Any Arrow reader reads such a stream; it sees the batches as decoded.
NAME is a path or a store URL. Nothing appears under NAME unless the whole
scan succeeds.`,
		Example: `  # count the rows of a generated dataset, with statistics
  sluice gen lineitem --rows 1000000 --files 4 --out ./data/lineitem
  sluice scan ./data/lineitem --stats

  # two columns of some rows, to an Arrow file
  sluice scan ./data/lineitem --columns l_orderkey,l_extendedprice \
      --filter "l_shipdate >= '1995-01-01' and l_discount < 0.05" -o cheap.arrow

  # from S3 through a modelled link, as a stream into another program
  sluice scan 's3://bucket/taxi/*.parquet' --sim s3 --filter "passenger_count > 2" -o - | ./consumer

  # rewrite a projection as Parquet in another bucket
  sluice scan s3://bucket/lineitem/ --columns l_orderkey,l_comment -o s3://other/comments.parquet

  # the same, zstd-compressed, row groups of at most 256k rows
  sluice scan s3://bucket/lineitem/ -o s3://other/lineitem.parquet --compression zstd --row-group-rows 262144`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScan(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts, args[0])
		},
	}
	opts.register(cmd.Flags()) // the same flags as run's scan stage
	return cmd
}

func runScan(ctx context.Context, out, errOut io.Writer, opts scanFlags, url string) error {
	flags, err := opts.parse(url)
	if err != nil {
		return err
	}
	spareProc([]string{url}, flags.profile)
	memBudget, columns, order := flags.memory, flags.columns, flags.order
	if memBudget == 0 {
		// sluice scan's heap bound and pool are sized by the budget.
		memBudget = defaultScanMemory
	}
	sink, err := newScanSink(opts.output, opts.format)
	if err != nil {
		return err
	}
	if sink.wopts, err = parquetOptions(&opts.write, ""); err != nil {
		return err
	}
	if opts.output == "-" {
		if termWidth(out) > 0 {
			return usagef("-o -: stdout is a terminal and the batches are binary Arrow IPC: pipe them on (| sluice show) or write a file (-o q.arrow)")
		}
		// A stage after this one may stop reading early (head): that is
		// an EPIPE to end quietly on, as stages do, not a fatal signal.
		quietPipes(nil, out)
	}

	base, rest := store.SplitGlob(url)
	st, key, err := openStoreSim(ctx, base, maxInFlight, flags.profile)
	if err != nil {
		return err
	}
	defer st.Close()
	if rest != "" {
		key += rest
	}
	// The bar's total is known once the footers are read; the scan
	// reports each row group's bytes as it is decoded.
	var prog *progress
	// Released buffers are reused rather than left to the collector:
	// fresh pages cost more than decoding them, and garbage would make the
	// heap outgrow the budget. What the pool keeps is part of the budget.
	// Mapped: its fresh memory, and the fetched bytes' (scan hands the
	// pool to its fetcher), come in huge pages where the system has them.
	// The fetcher's pages come back to the pool too, within the fetch
	// share of the budget, so the pool may keep that share on top.
	keep := min(memBudget/8, 32<<20)
	pool := mempool.NewMapped(memBudget)
	// What the output holds comes out of the budget too, so that the
	// whole process stays within it (plus the runtime's own): a Parquet
	// row group is held, encoded, until it is full; an upload to S3 holds
	// its parts in flight and the one filling (a file is written as it
	// comes).
	var writeShare, uploadShare int64
	if sink.f == format.Parquet {
		writeShare = memBudget / 4
		sink.wopts.RowGroupBytes, sink.wopts.DictPageBytes = parquetShares(writeShare)
	}
	if strings.HasPrefix(opts.output, "s3://") {
		uploadShare = min(memBudget/4, 32<<20)
		sink.wopts.UploadMemory = uploadShare
	}
	so := scan.Options{
		Columns:     columns,
		Filter:      opts.scan.Filter,
		BatchRows:   opts.scan.BatchRows,
		Memory:      memBudget - keep - writeShare - uploadShare,
		Concurrency: opts.scan.Concurrency,
		ReadDict:    flags.dict,
		Mem:         pool,
		Progress:    func(n int64) { prog.Add(n) },
		Int96Unit:   opts.scan.Int96Unit,
		// The order sluice run's scan gives, so that stages piped after
		// this one see the batches they see fused.
		Ordered: order == collect.Dataset,
	}
	ds, err := scan.Open(ctx, st, key, so)
	var nf *scan.NoFilesError
	if errors.As(err, &nf) || errors.Is(err, scan.ErrNotParquet) {
		return scanObjects(ctx, out, errOut, opts, flags, sink, url)
	}
	if err != nil {
		return err
	}
	if err := exec.CheckDict(ds.Schema(), flags.dict); err != nil {
		return usageError{err}
	}
	if need := ds.MinMemory() + keep + writeShare + uploadShare; need > memBudget {
		given := size.Format(opts.scan.Memory)
		if opts.scan.Memory == 0 {
			given = "512MiB (the default)"
		}
		fmt.Fprintf(errOut, "sluice: warning: --memory %s is less than reading one row group of this dataset takes; using %.0f MiB\n",
			given, float64(need)/(1<<20))
		memBudget = need
	}
	defer boundHeap(memBudget)()

	if order == collect.Arrival && sink.f == format.IPCStream {
		sink.positionsOf(ds.Plan())
	}
	if err := sink.open(ctx, ds.Schema(), out, flags.profile); err != nil {
		return err
	}
	prog = newProgress("scan", ds.BytesNeeded(), opts.quiet)
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
	stats := s.Stats()
	prog.Done()
	if err == nil {
		err = sink.close()
	}
	if err != nil {
		sink.abort()
		if opts.output == "-" && errors.Is(err, syscall.EPIPE) {
			return nil // the reader had all it wanted
		}
		return err
	}
	if opts.scan.Stats {
		printScanStats(errOut, stats, flags.profile.Link)
	}
	if sink.counting() {
		fmt.Fprintf(out, "%d rows\n", stats.Rows)
	}
	return nil
}

// scanObjects is sluice scan of objects that are not Parquet (Arrow IPC,
// CSV, JSON lines: exec.Scan tells them by content): read whole, with
// --columns and --filter applied to the rows.
func scanObjects(ctx context.Context, out, errOut io.Writer, opts scanFlags, flags parsedScan, sink *scanSink, url string) error {
	stores := newStoreSet()
	defer stores.Close()
	open := stores.Open
	if opts.scan.Sim != "" {
		open = withLink(stores, opts.scan.Sim, flags.profile)
	}
	src := exec.Scan([]string{url}, exec.ScanOptions{Columns: flags.columns, Filter: opts.scan.Filter, BatchRows: opts.scan.BatchRows, Dict: flags.dict, Open: open})
	var rows, batches int64
	var openErr error // exec.Collect's schema callback has no error to return
	collect := exec.Collect(func(sc *arrow.Schema) {
		openErr = sink.open(ctx, sc, out, flags.profile)
	}, func(rec arrow.RecordBatch) error {
		if openErr != nil {
			return openErr
		}
		rows += rec.NumRows()
		batches++
		return sink.write(rec, scan.Position{Batch: int(batches)})
	})
	err := exec.Run(ctx, exec.Pipeline{Source: src, Stages: []exec.Stage{collect}}, exec.Options{Open: stores.Open, Mem: mempool.NewMapped(0)})
	if err == nil {
		err = openErr
	}
	if err == nil {
		err = sink.close()
	}
	if err != nil {
		sink.abort()
		if opts.output == "-" && errors.Is(err, syscall.EPIPE) {
			return nil
		}
		return stageError(err)
	}
	if opts.scan.Stats {
		fmt.Fprintf(errOut, "scan: %d rows in %d batches, read whole (not Parquet: no row groups to skip)\n", rows, batches)
	}
	if sink.counting() {
		fmt.Fprintf(out, "%d rows\n", rows)
	}
	return nil
}

// printScanStats prints a scan's figures, and the share of a modelled
// link's capacity used when link (bytes/s) is above zero.
func printScanStats(w io.Writer, s scan.Stats, link float64) {
	fmt.Fprintln(w, s.String())
	fmt.Fprintln(w, s.Fetch.String())
	if link > 0 && s.Elapsed > 0 {
		rate := float64(s.BytesFetched) / s.Elapsed.Seconds()
		fmt.Fprintf(w, "link: %.1f MiB/s of %.1f MiB/s (%.0f%% of the modelled link's capacity)\n",
			rate/(1<<20), link/(1<<20), 100*rate/link)
	}
}

// scanSink is where scan's batches go: nowhere (only counted), standard
// output, or an object committed on close (package format).
type scanSink struct {
	dest  string // "" to count, "-" for stdout
	f     format.Format
	wopts format.Options
	st    *store.Store
	w     batchWriter
	obj   *format.Object
	// groups numbers the row groups read in dataset order, when each
	// batch of a stream in arrival order carries its exec.Position.
	groups map[[2]int]int64
}

// positionsOf makes the sink tag each batch with its place among the row
// groups plan lists, so that a sluice stage reading the stream can
// restore dataset order (exec.PositionKey).
func (s *scanSink) positionsOf(plan []scan.RowGroup) {
	s.groups = make(map[[2]int]int64, len(plan))
	for i, rg := range plan {
		s.groups[[2]int{rg.File, rg.Index}] = int64(i)
	}
}

// batchWriter is an output's writer: a format's, or a stream to stdout
// (exec.StreamWriter, which hands batches to a sluice stage reading the
// pipe through shared memory).
type batchWriter interface {
	Write(arrow.RecordBatch) error
	Close() error
	Abort()
}

func newScanSink(dest, name string) (*scanSink, error) {
	s := &scanSink{dest: dest}
	if dest == "" {
		if name != "" {
			return nil, usagef("--format %s: without -o nothing is written", name)
		}
		return s, nil
	}
	f, err := format.Choose(dest, name)
	if err != nil {
		return nil, usagef("-o %s: %v", dest, err)
	}
	s.f = f
	return s, nil
}

func (s *scanSink) counting() bool { return s.dest == "" }

// open starts the output; an object is written through the latency and
// bandwidth of the link model p, the scan's own, so that --sim shapes an
// upload as it does the reads. Not through its faults: the scan retries
// its reads, and nothing above the store retries an output's requests.
func (s *scanSink) open(ctx context.Context, sc *arrow.Schema, stdout io.Writer, p sim.Profile) error {
	if s.counting() {
		return nil
	}
	var err error
	if s.dest == "-" && s.f == format.IPCStream {
		s.w = exec.NewStreamWriter(stdout, sc, exec.StreamOptions{HandOff: handOff()})
		return nil
	}
	if s.dest == "-" {
		s.w, err = format.NewWriterOptions(stdout, s.f, sc, memory.DefaultAllocator, s.wopts)
		if err != nil {
			return usagef("-o -: %v", err)
		}
		return nil
	}
	so := globals.storeOptions(maxInFlight, 0)
	so.Wrap = sim.WrapOption(p.Paced())
	st, key, err := store.Open(ctx, s.dest, so)
	if err != nil {
		return err
	}
	s.obj, err = format.CreateOptions(ctx, st, key, s.f, sc, memory.DefaultAllocator, s.wopts)
	if err != nil {
		st.Close()
		var ne *format.NotObjectError
		if errors.As(err, &ne) {
			return usagef("-o %s: names a directory, not a file", s.dest)
		}
		var se *store.Error
		if errors.As(err, &se) {
			return err
		}
		return usagef("-o %s: %v", s.dest, err)
	}
	s.st, s.w = st, s.obj.Writer
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
		tagged := exec.WithPosition(rec, exec.Position{Group: g, Batch: int64(pos.Batch), Last: pos.Last, File: pos.File, RowGroup: pos.RowGroup})
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
		s.st.Close()
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
		s.st.Close()
	} else {
		s.w.Abort()
	}
	s.w, s.obj = nil, nil
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
