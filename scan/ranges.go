package scan

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/sluice-data/sluice/store"
)

// maxDictHeaderSize is arrow-go's padding for files from parquet-mr before
// 1.2.9, whose column chunk sizes leave out the dictionary page header
// (PARQUET-816, IMPALA-694). Mirrored from parquet/file/row_group_reader.go.
const maxDictHeaderSize = 100

// chunkRange is the byte range arrow-go reads for one column chunk, exactly
// as RowGroupReader.GetColumnPageReader computes it (v18.8.0): from the
// dictionary page if there is one before the data pages, for the chunk's
// total compressed size, padded for old parquet-mr files. Reading the same
// range is what lets every one of arrow-go's reads be served from what
// was fetched. Ranges outside the file are an error here rather than an
// allocation of whatever a corrupt size says.
func chunkRange(md *metadata.FileMetaData, rg *metadata.RowGroupMetaData, leaf int) (store.Range, error) {
	col, err := rg.ColumnChunk(leaf)
	if err != nil {
		return store.Range{}, err
	}
	start := col.DataPageOffset()
	if col.HasDictionaryPage() && col.DictionaryPageOffset() > 0 && start > col.DictionaryPageOffset() {
		start = col.DictionaryPageOffset()
	}
	n := col.TotalCompressedSize()
	size := md.GetSourceFileSize()
	if start < 0 || n < 0 {
		return store.Range{}, fmt.Errorf("invalid column chunk metadata for %s: offset %d and length %d must not be negative",
			col.PathInSchema(), start, n)
	}
	if md.WriterVersion().LessThan(metadata.Parquet816FixedVersion) {
		if start > size || n > size {
			return store.Range{}, fmt.Errorf("invalid column chunk metadata for %s: offset %d and length %d must both be less than the file size %d",
				col.PathInSchema(), start, n, size)
		}
		n += min(maxDictHeaderSize, size-(start+n))
	}
	if start > size || n > size-start {
		return store.Range{}, fmt.Errorf("invalid column chunk metadata for %s: bytes [%d, %d) are past the end of the file (%d bytes)",
			col.PathInSchema(), start, start+n, size)
	}
	return store.Range{Off: start, Len: n}, nil
}

// checkCodec fails a column chunk compressed with a codec arrow-go does
// not implement (the deprecated Hadoop-framed LZ4, LZO), before arrow-go
// gets to it: its page reader allocates before it finds out and does not
// give the memory back on that error.
func checkCodec(rg *metadata.RowGroupMetaData, leaf int) error {
	col, err := rg.ColumnChunk(leaf)
	if err != nil {
		return err
	}
	if _, err := compress.GetCodec(col.Compression()); err != nil {
		return fmt.Errorf("column %s: %w", col.PathInSchema(), err)
	}
	return nil
}

// mergeRanges sorts ranges and joins those that touch or overlap, so that
// covered can answer with one search.
func mergeRanges(rs []store.Range) []store.Range {
	out := slices.Clone(rs)
	slices.SortFunc(out, func(a, b store.Range) int { return cmp3(a.Off, b.Off) })
	m := out[:0]
	for _, r := range out {
		if r.Len <= 0 {
			continue
		}
		if n := len(m); n > 0 && r.Off <= m[n-1].Off+m[n-1].Len {
			m[n-1].Len = max(m[n-1].Len, r.Off+r.Len-m[n-1].Off)
			continue
		}
		m = append(m, r)
	}
	return m
}

// covered reports whether [off, off+n) lies within one of the merged ranges.
func covered(merged []store.Range, off, n int64) bool {
	i, _ := slices.BinarySearchFunc(merged, off, func(r store.Range, off int64) int {
		if r.Off+r.Len <= off {
			return -1
		}
		if r.Off > off {
			return 1
		}
		return 0
	})
	return i < len(merged) && merged[i].Off <= off && off+n <= merged[i].Off+merged[i].Len
}
