package collect

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// FileScan is a dataset read one part per file (see ScanFiles).
type FileScan struct {
	*Stream
	start time.Time

	mu    sync.Mutex
	stats scan.Stats
}

// ScanFiles reads the dataset ds, opened from pattern in st with so, as
// parts of one file each: the files with something to read, in dataset
// order, each read by a scan of its own one row group at a time (so in
// order), co.Parallel files at once, each with an equal share of
// so.Memory. With co.Order Dataset the stream is in dataset order and a
// file ahead of a slow one waits once the window is full: memory stays
// bounded whatever a straggler does. Parallelism is across files only.
func ScanFiles(ctx context.Context, st *store.Store, pattern string, ds *scan.Dataset, so scan.Options, co Options) *FileScan {
	type piece struct {
		file int
		key  string
	}
	var pieces []piece
	for i, f := range ds.Files() {
		if !f.Pruned && f.RowGroups > 0 {
			pieces = append(pieces, piece{i, f.Key})
		}
	}
	if co.Parallel <= 0 {
		co.Parallel = so.Concurrency
	}
	if co.Parallel <= 0 {
		co.Parallel = runtime.GOMAXPROCS(0)
	}
	so.Concurrency = 1
	if so.Memory > 0 {
		so.Memory = max(so.Memory/int64(co.Parallel), 8<<20)
	}
	fs := &FileScan{start: time.Now()}
	schema := ds.Schema()
	fs.Stream = Collect(ctx, len(pieces), func(ctx context.Context, part int, emit func(scan.Batch) error) error {
		p := pieces[part]
		st, err := scanPiece(ctx, st, pattern, p.key, p.file, so, schema, emit)
		fs.add(st)
		return err
	}, co)
	return fs
}

// ScanStats adds up the per-file scans' statistics (Open and the
// durations are summed over them too; Elapsed is the wall time so far).
func (f *FileScan) ScanStats() scan.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.stats
	s.Elapsed = time.Since(f.start)
	return s
}

func (f *FileScan) add(s scan.Stats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &f.stats
	t.Files += s.Files
	t.FilesPruned += s.FilesPruned
	t.RowGroups += s.RowGroups
	t.RowGroupsPruned += s.RowGroupsPruned
	t.Rows += s.Rows
	t.RowsDecoded += s.RowsDecoded
	t.Batches += s.Batches
	t.BytesNeeded += s.BytesNeeded
	t.BytesFetched += s.BytesFetched
	t.Requests += s.Requests
	t.Fallbacks += s.Fallbacks
	t.FallbackBytes += s.FallbackBytes
	t.Open += s.Open
	t.Decode += s.Decode
	t.FetchWait += s.FetchWait
	t.Wait += s.Wait
	t.Fetch.Add(s.Fetch)
}

// openPiece opens the one file key of the dataset pattern (under prefix
// in st) with the dataset's partition columns.
func openPiece(ctx context.Context, st *store.Store, prefix, pattern, key string, so scan.Options) (*scan.Dataset, error) {
	pp, err := piecePattern(prefix, pattern, key)
	if err != nil {
		return nil, err
	}
	return scan.Open(ctx, st, pp, so)
}

// streamPiece scans a piece and hands its batches to emit with their
// position in the whole dataset (file index file).
func streamPiece(ctx context.Context, ds *scan.Dataset, file int, key string, emit func(scan.Batch) error) (scan.Stats, error) {
	sc := ds.Scan(ctx)
	defer sc.Close()
	for sc.Next() {
		b := sc.Batch()
		b.Pos.File, b.Pos.Key = file, key
		if err := emit(b); err != nil {
			return sc.Stats(), err
		}
	}
	return sc.Stats(), sc.Err()
}

// scanPiece reads one file of a dataset planned with schema want.
func scanPiece(ctx context.Context, st *store.Store, pattern, key string, file int, so scan.Options, want *arrow.Schema, emit func(scan.Batch) error) (scan.Stats, error) {
	ds, err := openPiece(ctx, st, "", pattern, key, so)
	if err != nil {
		return scan.Stats{}, err
	}
	if !ds.Schema().Equal(want) {
		return scan.Stats{}, fmt.Errorf("%s: its schema %v differs from the dataset's %v", st.URL(key), ds.Schema(), want)
	}
	return streamPiece(ctx, ds, file, key, emit)
}
