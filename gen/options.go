package gen

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Options size and seed a generated dataset. The output depends only on
// Rows, Files, Seed and RowGroupRows: Concurrency, Mem and Progress change
// how it is produced, never its bytes.
type Options struct {
	// Rows is the total number of rows across all files (> 0).
	Rows int64
	// Files is the number of files (1..Rows). Rows are spread as evenly as
	// possible; the first Rows%Files files get one row more.
	Files int
	// Seed selects the dataset; the same seed gives the same bytes.
	Seed uint64
	// RowGroupRows is the number of rows per Parquet row group. Zero means
	// a quarter of the smallest file (so every file has at least four row
	// groups), capped at 1<<20 rows.
	RowGroupRows int64
	// Concurrency is how many files are generated at once; zero means
	// GOMAXPROCS. Each file is encoded by one goroutine.
	Concurrency int
	// Mem allocates the Arrow batches and the Parquet encoder's buffers;
	// nil means memory.DefaultAllocator.
	Mem memory.Allocator
	// Progress, when set, is called with the size of every write to the
	// store, from several goroutines at once.
	Progress func(bytes int64)

	// batchRows, when set, is the size of the Arrow batches handed to the
	// Parquet writer (tests force many batches per row group with it).
	batchRows int64
}

// File is one written object.
type File struct {
	Key   string
	Rows  int64
	Bytes int64
}

// Result describes a generated dataset. Files are in index order.
type Result struct {
	Files   []File
	Rows    int64
	Bytes   int64
	Elapsed time.Duration
}

const maxRowGroupRows = 1 << 20

// defaultBatchRows is the size of the Arrow batches handed to the
// Parquet writer.
const defaultBatchRows = 64 << 10

func (o Options) batchSize() int64 {
	if o.batchRows > 0 {
		return o.batchRows
	}
	return defaultBatchRows
}

func (o Options) validate() error {
	switch {
	case o.Rows <= 0:
		return fmt.Errorf("gen: Rows must be > 0, got %d", o.Rows)
	case o.Files <= 0:
		return fmt.Errorf("gen: Files must be > 0, got %d", o.Files)
	case int64(o.Files) > o.Rows:
		return fmt.Errorf("gen: Files (%d) must not exceed Rows (%d): every file needs a row", o.Files, o.Rows)
	case o.RowGroupRows < 0:
		return fmt.Errorf("gen: RowGroupRows must be >= 0 (0 = default), got %d", o.RowGroupRows)
	case o.Concurrency < 0:
		return fmt.Errorf("gen: Concurrency must be >= 0 (0 = GOMAXPROCS), got %d", o.Concurrency)
	}
	return nil
}

var errNilStore = errors.New("gen: nil store")

func (o Options) rowGroupRows() int64 {
	if o.RowGroupRows > 0 {
		return o.RowGroupRows
	}
	return min(max(o.Rows/int64(o.Files)/4, 1), maxRowGroupRows)
}

func (o Options) concurrency() int {
	if o.Concurrency > 0 {
		return o.Concurrency
	}
	return runtime.GOMAXPROCS(0)
}

func (o Options) mem() memory.Allocator {
	if o.Mem != nil {
		return o.Mem
	}
	return memory.DefaultAllocator
}

// split returns the first global row index and the row count of file i.
func (o Options) split(i int) (start, rows int64) {
	n, extra := o.Rows/int64(o.Files), o.Rows%int64(o.Files)
	idx := int64(i)
	start = idx*n + min(idx, extra)
	rows = n
	if idx < extra {
		rows++
	}
	return start, rows
}
