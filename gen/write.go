package gen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/store"
)

// source produces the rows of one file, in order.
type source interface {
	// next returns the next n rows; the caller releases the batch.
	next(n int) arrow.RecordBatch
	// release frees the source's builders.
	release()
}

// dataset is what a table contributes; generate does the rest.
type dataset struct {
	name string
	// schema is what the batches carry (see writeSchema); readers of the
	// files see the table's public schema.
	schema *arrow.Schema
	// plain are the columns written without a dictionary.
	plain []string
	// source returns the rows of file i, which holds global rows
	// [start, start+rows). It is called from the file's goroutine.
	source func(mem memory.Allocator, i int, start, rows int64) source
	// split, when set, replaces Options.split: tables whose rows come in
	// groups that must not straddle files (an order's lines) size their
	// files themselves.
	split func(i int) (start, rows int64)
}

// check refuses what no table can be generated with.
func check(st *store.Store, opts Options) error {
	if st == nil {
		return errNilStore
	}
	return opts.validate()
}

// generate writes every file of ds, Concurrency at a time. On any error
// it aborts the files in progress and deletes those it already committed,
// so a failed run leaves nothing of itself behind.
func generate(ctx context.Context, st *store.Store, prefix string, opts Options, ds *dataset) (Result, error) {
	t0 := time.Now()
	files := make([]File, opts.Files)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.concurrency())
	for i := range opts.Files {
		if gctx.Err() != nil {
			break
		}
		key := store.Join(prefix, fmt.Sprintf("part-%05d.parquet", i))
		g.Go(func() error {
			f, err := writeFile(gctx, st, key, opts, ds, i)
			if err != nil {
				return fmt.Errorf("gen %s: %s: %w", ds.name, key, err)
			}
			files[i] = f
			return nil
		})
	}
	err := g.Wait()
	if err == nil {
		// A cancellation that arrived after the last file started is
		// still a cancellation: the caller asked for no dataset.
		err = ctx.Err()
	}
	if err != nil {
		return Result{}, errors.Join(err, removeCommitted(ctx, st, files))
	}
	res := Result{Files: files, Elapsed: time.Since(t0)}
	for _, f := range files {
		res.Rows += f.Rows
		res.Bytes += f.Bytes
	}
	return res, nil
}

// removeCommitted deletes the files a failed run had already committed. It
// runs even when ctx is cancelled, since cancellation is the usual reason.
func removeCommitted(ctx context.Context, st *store.Store, files []File) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var errs []error
	for _, f := range files {
		if f.Key == "" {
			continue
		}
		if err := st.Delete(ctx, f.Key); err != nil {
			errs = append(errs, fmt.Errorf("gen: removing %s after failure: %w", f.Key, err))
		}
	}
	return errors.Join(errs...)
}

var errAborted = errors.New("gen: file aborted")

// sink counts bytes and reports progress. It hides the store writer's
// Close from pqarrow, which would otherwise commit the object itself.
//
// It never returns an error to pqarrow: arrow-go's column writers release
// their encoders only when closing succeeds, so a failing sink would leak
// allocator memory. Instead the sink keeps the first error, drops every
// later byte, and writeFile checks err between batches and before commit.
type sink struct {
	w        *store.Writer
	n        int64
	err      error
	progress func(int64)
}

func (s *sink) Write(p []byte) (int, error) {
	if s.err != nil {
		return len(p), nil
	}
	n, err := s.w.Write(p)
	s.n += int64(n)
	if s.progress != nil && n > 0 {
		s.progress(int64(n))
	}
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		s.err = err
	}
	return len(p), nil
}

func writerProps(opts Options, ds *dataset, rowGroupRows int64) *parquet.WriterProperties {
	props := []parquet.WriterProperty{
		parquet.WithAllocator(opts.mem()),
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithStats(true),
		parquet.WithMaxRowGroupLength(rowGroupRows),
	}
	for _, c := range ds.plain {
		props = append(props, parquet.WithDictionaryFor(c, false))
	}
	return parquet.NewWriterProperties(props...)
}

// writeFile writes file i and commits it only when all of it is written.
func writeFile(ctx context.Context, st *store.Store, key string, opts Options, ds *dataset, i int) (File, error) {
	split := opts.split
	if ds.split != nil {
		split = ds.split
	}
	start, rows := split(i)
	rgRows := opts.rowGroupRows()
	w, err := st.NewWriter(ctx, key, store.WriteOptions{Retry: retry.Policy{}.Do})
	if err != nil {
		return File{}, err
	}
	out := &sink{w: w, progress: opts.Progress}
	mem := opts.mem()
	fw, err := pqarrow.NewFileWriter(ds.schema, out, writerProps(opts, ds, rgRows),
		pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem)))
	if err != nil {
		_ = w.Abort()
		return File{}, err
	}
	src := ds.source(mem, i, start, rows)
	defer src.release()

	err = func() error {
		for done := int64(0); done < rows; {
			// Batches never straddle a row group, so WriteBuffered
			// never has to slice one.
			if err := fw.NewBufferedRowGroupChecked(); err != nil {
				return err
			}
			rg := min(rgRows, rows-done)
			for k := int64(0); k < rg; {
				if err := ctx.Err(); err != nil {
					return err
				}
				if out.err != nil {
					return out.err
				}
				n := min(opts.batchSize(), rg-k)
				rec := src.next(int(n))
				err := fw.WriteBuffered(rec)
				rec.Release()
				if err != nil {
					return err
				}
				k += n
			}
			done += rg
		}
		if err := fw.Close(); err != nil {
			return err
		}
		if out.err != nil {
			return out.err
		}
		return ctx.Err()
	}()
	if err != nil {
		// Close releases the encoders' buffers; the sink drops the bytes
		// so nothing more goes to an object being discarded.
		if out.err == nil {
			out.err = errAborted
		}
		_ = fw.Close()
		_ = w.Abort()
		return File{}, err
	}
	if err := w.Close(); err != nil {
		_ = w.Abort()
		return File{}, err
	}
	return File{Key: key, Rows: rows, Bytes: out.n}, nil
}
