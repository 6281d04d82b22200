package scanbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// decodeAll reads the named top-level columns (nil: every column) of the
// given row groups (nil: all) of one Parquet file with arrow-go's record
// reader, releasing each batch, and returns the rows read. Batches are
// bounded (batchRows): a ReadTable of a long string column spends its time
// growing one huge array.
func decodeAll(ctx context.Context, r parquet.ReaderAtSeeker, md *metadata.FileMetaData, columns []string, rowGroups []int, batchRows int, mem memory.Allocator) (rows int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoding failed: %v", p)
		}
	}()
	props := parquet.NewReaderProperties(mem)
	props.BufferedStreamEnabled = false // one ReadAt per column chunk
	opts := []file.ReadOption{file.WithReadProps(props)}
	if md != nil {
		opts = append(opts, file.WithMetadata(md))
	}
	pf, err := file.NewParquetReader(r, opts...)
	if err != nil {
		return 0, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(batchRows)}, mem)
	if err != nil {
		return 0, err
	}
	leaves, err := leavesOf(pf.MetaData(), columns)
	if err != nil {
		return 0, err
	}
	rr, err := fr.GetRecordReader(ctx, leaves, rowGroups)
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	return rows, rr.Err()
}

// leavesOf is the leaf columns under the named top-level columns, as
// arrow-go's record reader takes them; nil names mean every column.
func leavesOf(md *metadata.FileMetaData, names []string) ([]int, error) {
	if names == nil {
		return nil, nil
	}
	var leaves []int
	for _, name := range names {
		found := false
		for i := range md.Schema.NumColumns() {
			if md.Schema.Column(i).ColumnPath()[0] == name {
				leaves = append(leaves, i)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no column %q", name)
		}
	}
	return leaves, nil
}

// eachFile runs fn over the objects with k of them at once, in order.
func eachFile(ctx context.Context, objs []object, k int, fn func(ctx context.Context, o object) (int64, error)) (int64, error) {
	var next, rows atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range min(k, len(objs)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(objs) {
					return nil
				}
				n, err := fn(gctx, objs[i])
				if err != nil {
					return err
				}
				rows.Add(n)
			}
		})
	}
	err := g.Wait()
	return rows.Load(), err
}

// naive reads k files at once with arrow-go's Parquet reader over
// store.ReaderAt: a Stat to open each file, arrow-go's own two dependent
// footer reads, and one ranged GET per column chunk of columns (nil: all),
// in the order its record reader asks for them. This is what plugging an
// object store into arrow-go as an io.ReaderAt gives.
func naive(ctx context.Context, st *store.Store, objs []object, columns []string, k, batchRows int, mem memory.Allocator) (time.Duration, int64, error) {
	start := time.Now()
	rows, err := eachFile(ctx, objs, k, func(ctx context.Context, o object) (int64, error) {
		ra, err := st.NewReaderAt(ctx, o.key)
		if err != nil {
			return 0, err
		}
		n, err := decodeAll(ctx, io.NewSectionReader(ra, 0, ra.Size()), nil, columns, nil, batchRows, mem)
		if err != nil {
			return n, fmt.Errorf("naive read of %s: %w", st.URL(o.key), err)
		}
		return n, nil
	})
	return time.Since(start), rows, err
}

// whole fetches each of k files at once with one GET into memory, then
// decodes columns (nil: all) from there: the other common way to read
// Parquet from object storage, which waits for a whole object, whatever
// columns are wanted, before decoding any of it.
func whole(ctx context.Context, st *store.Store, objs []object, columns []string, k, batchRows int, mem memory.Allocator) (time.Duration, int64, error) {
	var bufs buffers
	start := time.Now()
	rows, err := eachFile(ctx, objs, k, func(ctx context.Context, o object) (int64, error) {
		rc, info, err := st.ReadRange(ctx, o.key, store.All(), store.ReadOptions{})
		if err != nil {
			return 0, err
		}
		buf := bufs.get(info.Size)
		defer bufs.put(buf)
		_, err = io.ReadFull(rc, buf)
		rc.Close()
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", st.URL(o.key), err)
		}
		n, err := decodeAll(ctx, bytes.NewReader(buf), nil, columns, nil, batchRows, mem)
		if err != nil {
			return n, fmt.Errorf("decode %s: %w", st.URL(o.key), err)
		}
		return n, nil
	})
	return time.Since(start), rows, err
}

// inMemory is a dataset's file bytes, loaded once for decode-only and
// arrow-go's reader beside it; st holds the same bytes under the same
// keys, for scan.
type inMemory struct {
	data [][]byte
	md   []*metadata.FileMetaData
	st   *store.Store
}

func load(ctx context.Context, st *store.Store, objs []object) (*inMemory, error) {
	m := &inMemory{data: make([][]byte, len(objs)), md: make([]*metadata.FileMetaData, len(objs)), st: store.New(store.NewMemDriver(), "mem://decode/")}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, o := range objs {
		g.Go(func() error {
			b, err := st.ReadAll(gctx, o.key)
			if err != nil {
				return err
			}
			pf, err := file.NewParquetReader(bytes.NewReader(b))
			if err != nil {
				return fmt.Errorf("%s: %w", st.URL(o.key), err)
			}
			m.data[i], m.md[i] = b, pf.MetaData()
			if err := pf.Close(); err != nil {
				return err
			}
			_, err = m.st.Put(gctx, o.key, bytes.NewReader(b), store.WriteOptions{})
			return err
		})
	}
	return m, g.Wait()
}

// decodeOnly scans files already in memory with scan's options (all
// columns): scan's decoding with no link at all, the ceiling of a scan on
// this machine.
func decodeOnly(ctx context.Context, m *inMemory, pattern string, opts scan.Options) (ScanResult, error) {
	return runScan(ctx, m.st, pattern, opts, false)
}

// arrowGoOnly decodes every row group of files already in memory with
// arrow-go's record reader, as many at once as there are cores, as scan
// does: the reference decode-only is measured against.
func arrowGoOnly(ctx context.Context, m *inMemory, batchRows int, mem memory.Allocator) (time.Duration, int64, error) {
	type task struct{ file, rg int }
	var tasks []task
	for i, md := range m.md {
		for rg := range md.NumRowGroups() {
			tasks = append(tasks, task{i, rg})
		}
	}
	var next, rows atomic.Int64
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for range min(runtime.GOMAXPROCS(0), len(tasks)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(tasks) {
					return nil
				}
				t := tasks[i]
				n, err := decodeAll(gctx, bytes.NewReader(m.data[t.file]), m.md[t.file], nil, []int{t.rg}, batchRows, mem)
				if err != nil {
					return err
				}
				rows.Add(n)
			}
		})
	}
	err := g.Wait()
	return time.Since(start), rows.Load(), err
}
