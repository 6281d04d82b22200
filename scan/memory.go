package scan

import (
	"math"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// How arrow-go decodes a column chunk read through buffered streams: a
// read buffer, then each page copied out compressed and decompressed into
// a buffer of its own; pages are rarely over a megabyte. The read buffer
// is arrow-go's page header size: a header is peeked through it, and a
// page body larger than it is read straight into the page's buffer (a
// larger read buffer took a copy of every byte on the way, and was fresh
// memory for each column and decode worker: 16 % of query B's faults).
const (
	streamBuffer = 16 << 10
	pageGuess    = 1 << 20
)

// decodeMemory estimates what decoding row group rg of a file holds
// besides its fetched bytes: the page buffers of the columns read, and
// one Arrow batch of at most batchRows rows (decodeReserve counts how
// many batches are alive at once).
func decodeMemory(md *metadata.FileMetaData, rg *metadata.RowGroupMetaData, leaves []int, batchRows int64) (pages, batch int64) {
	rows := max(rg.NumRows(), 1)
	n := min(batchRows, rows)
	for _, leaf := range leaves {
		cc, err := rg.ColumnChunk(leaf)
		if err != nil {
			continue
		}
		pages += min(cc.TotalCompressedSize(), streamBuffer) + 2*min(cc.TotalUncompressedSize(), pageGuess)
		// Parquet's plain size is close to Arrow's; a dictionary-encoded
		// column is far smaller in Parquet than in Arrow, hence the floor.
		perRow := max(cc.TotalUncompressedSize()/rows, arrowWidth(md.Schema.Column(leaf)))
		batch += (perRow + 1) * n // + a validity bit, generously
	}
	// Builders round their buffers up, and a batch's strings may be
	// longer than the row group's average.
	return pages, batch + batch/8
}

// arrowWidth is a lower bound of a value's Arrow size in bytes.
func arrowWidth(c interface {
	PhysicalType() parquet.Type
	TypeLength() int
}) int64 {
	switch c.PhysicalType() {
	case parquet.Types.Boolean:
		return 1
	case parquet.Types.Int32, parquet.Types.Float:
		return 4
	case parquet.Types.Int64, parquet.Types.Double, parquet.Types.Int96:
		return 8
	case parquet.Types.FixedLenByteArray:
		return int64(max(c.TypeLength(), 1))
	default: // byte arrays: an offset and a short value
		return 4 + 8
	}
}

// memEstimate is the most any row group read takes, over those chosen:
// its fetched bytes, its page buffers, one of its batches, and how many
// batches the longest is decoded into.
type memEstimate struct{ unit, pages, batch, batches int64 }

// decodeReserve is the share of the memory budget kept for decoding when
// workers row groups are decoded at once: their page buffers, and per
// worker a batch being built, one waiting to be sent and one in the
// channel, plus the one the consumer holds. An ordered scan also holds
// every batch of the row groups decoded ahead of the one due until their
// turn: all workers' but one.
func (d *Dataset) decodeReserve(workers int) int64 { return d.reserve(workers, d.opts.Ordered) }

// reserve is decodeReserve for a scan in dataset order or not, which
// Dataset.Reader chooses whatever Options.Ordered says.
func (d *Dataset) reserve(workers int, ordered bool) int64 {
	w := int64(workers)
	batches := 3*w + 1
	if ordered {
		batches += (w - 1) * d.mem.batches
	}
	return w*d.mem.pages + batches*d.mem.batch
}

// workers is how many row groups are decoded at once: Options.Concurrency,
// fewer when there are fewer row groups, and fewer when decoding that many
// at once would take more than three quarters of the budget.
func (d *Dataset) workers() int { return d.workersFor(d.opts.Ordered) }

func (d *Dataset) workersFor(ordered bool) int {
	w := max(min(d.opts.Concurrency, len(d.groups)), 1)
	for w > 1 && d.reserve(w, ordered) > d.opts.Memory/4*3 {
		w--
	}
	return w
}

// fetchMemory is what fetch may hold: the budget less decoding's reserve,
// but never under a quarter of it, so a budget too small for the estimate
// still reads ahead a little (fetch admits one unit larger than its budget
// when nothing else is held).
func (d *Dataset) fetchMemory() int64 {
	return max(d.opts.Memory-d.decodeReserve(d.workers()), d.opts.Memory/4)
}

// localFetchMemory is what fetch holds by default over a local store: a
// row group for each decoder and one more.
func (d *Dataset) localFetchMemory() int64 {
	return int64(d.workers()+1) * d.mem.unit
}

// MinMemory is the least budget a scan of the dataset keeps to: one row
// group's column chunks and one worker's decoding buffers. A smaller
// Options.Memory is exceeded by that much.
func (d *Dataset) MinMemory() int64 {
	return d.mem.unit + d.decodeReserve(1)
}

// binaryBatchBytes is the most string or binary bytes a batch is planned
// to hold in one column: half of what Arrow's int32 offsets address, as
// a batch's values may be longer than the row group's average.
const binaryBatchBytes = 1 << 30

// binaryBatchRows is how many rows a batch of the row group holds: at
// most batchRows, and few enough that no string or binary column's
// values, as long on average as its column chunk says, pass
// binaryBatchBytes (large_string_map.brotli.parquet holds two 1 GiB
// strings in one row group: two batches of one row each). arrow-go's
// builders do not check their int32 offsets, so a batch past 2 GiB
// would come out corrupt. Dictionary-encoded chunks can decode to far
// more than their size; those are not bounded here.
func binaryBatchRows(rg *metadata.RowGroupMetaData, leaves []int, batchRows int64) int64 {
	rows := max(rg.NumRows(), 1)
	for _, leaf := range leaves {
		cc, err := rg.ColumnChunk(leaf)
		if err != nil || cc.Type() != parquet.Types.ByteArray {
			continue
		}
		if size := cc.TotalUncompressedSize(); size > binaryBatchBytes {
			batchRows = min(batchRows, max(rows*binaryBatchBytes/size, 1))
		}
	}
	return batchRows
}

// pageLimits are the largest uncompressed and compressed pages arrow-go
// may read in the row group: its own limits (which guard against a page
// header claiming gigabytes), raised to the largest column chunk the
// footer declares, since no page is larger than its chunk. A file whose
// footer declares a 1 GiB chunk is a file with a 1 GiB page to read
// (large_string_map.brotli.parquet), and its memory is what the footer
// said it would be.
func pageLimits(rg *metadata.RowGroupMetaData, leaves []int) (uncompressed, compressed int64) {
	uncompressed, compressed = parquet.DefaultMaxUncompressedPageSize, parquet.DefaultMaxCompressedPageSize
	for _, leaf := range leaves {
		if cc, err := rg.ColumnChunk(leaf); err == nil {
			uncompressed = max(uncompressed, min(cc.TotalUncompressedSize(), math.MaxInt32))
			compressed = max(compressed, min(cc.TotalCompressedSize(), math.MaxInt32))
		}
	}
	return uncompressed, compressed
}
