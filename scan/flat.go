package scan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/sluice-data/sluice/mempool"
)

// The flat path decodes the common columns itself, from the pages
// arrow-go's page reader hands out (decompressed, checked): top-level
// columns with no repetition and at most one definition level, of 4- or
// 8-byte numbers (int32, date32, int64, float32, float64) or of strings
// read as dictionaries, PLAIN or dictionary encoded. The values go
// straight into buffers of the scan's pool, and the scratch it needs is
// kept from one column chunk to the next: arrow-go's record readers make
// fresh index scratch for every column chunk, a fresh index slice for
// every batch of a dictionary column and a fresh copy of every date
// column, which is most of what a scan allocates. A row group with any
// other column is decoded by arrow-go as before.

// flatKind is how a flat column's values are laid out.
type flatKind int

const (
	flatNone  flatKind = iota // not flat: arrow-go decodes the row group
	flat4                     // 4-byte values
	flat8                     // 8-byte values
	flatDict                  // byte arrays read as a dictionary of int32 indices
	flatBytes                 // byte arrays read as strings or binary: offsets and data
)

// flatKindOf says how leaf of row group rg decodes on the flat path, as
// a column of type typ (the dataset's).
func flatKindOf(md *metadata.FileMetaData, rg *metadata.RowGroupMetaData, leaf int, typ arrow.DataType) flatKind {
	col := md.Schema.Column(leaf)
	if col.MaxRepetitionLevel() != 0 || col.MaxDefinitionLevel() > 1 || len(col.ColumnPath()) != 1 {
		return flatNone
	}
	cc, err := rg.ColumnChunk(leaf)
	// Its pages are read with arrow-go's default limits and no
	// decryption: a chunk larger than those limits, or encrypted, is not.
	if err != nil || cc.CryptoMetadata() != nil || cc.TotalCompressedSize() > parquet.DefaultMaxCompressedPageSize ||
		cc.TotalUncompressedSize() > parquet.DefaultMaxUncompressedPageSize {
		return flatNone
	}
	for _, e := range cc.Encodings() {
		switch e {
		case parquet.Encodings.Plain, parquet.Encodings.RLE, parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
		default:
			return flatNone
		}
	}
	var kind flatKind
	switch pt := col.PhysicalType(); {
	case pt == parquet.Types.Int32 && (typ.ID() == arrow.INT32 || typ.ID() == arrow.DATE32):
		kind = flat4
	case pt == parquet.Types.Float && typ.ID() == arrow.FLOAT32:
		kind = flat4
	case pt == parquet.Types.Int64 && typ.ID() == arrow.INT64:
		kind = flat8
	case pt == parquet.Types.Double && typ.ID() == arrow.FLOAT64:
		kind = flat8
	case pt == parquet.Types.ByteArray && typ.ID() == arrow.DICTIONARY:
		dt := typ.(*arrow.DictionaryType)
		if dt.IndexType.ID() != arrow.INT32 || (dt.ValueType.ID() != arrow.STRING && dt.ValueType.ID() != arrow.BINARY) {
			return flatNone
		}
		// Only when every data page is dictionary encoded, as the page
		// statistics say: a writer that gave up on its dictionary wrote
		// the rest PLAIN, and arrow-go builds a dictionary of those.
		stats := cc.EncodingStats()
		if len(stats) == 0 {
			return flatNone
		}
		for _, s := range stats {
			if s.PageType != file.PageTypeDictionaryPage && s.Encoding != parquet.Encodings.RLEDict && s.Encoding != parquet.Encodings.PlainDict {
				return flatNone
			}
		}
		kind = flatDict
	case pt == parquet.Types.ByteArray && (typ.ID() == arrow.STRING || typ.ID() == arrow.BINARY):
		// PLAIN pages, dictionary pages or both (a writer that gave up
		// on its dictionary): the values are copied out either way.
		kind = flatBytes
	default:
		return flatNone
	}
	return kind
}

// flatColumn decodes one column chunk, batch by batch.
type flatColumn struct {
	pages  file.PageReader // the worker's (flatReaders)
	kind   flatKind
	typ    arrow.DataType
	maxDef int16
	mem    memory.Allocator
	name   string

	// the dictionary page's values: fixed-width values as they are, or
	// the strings as an Arrow array each batch's dictionary shares
	dict     []byte
	dictLen  int
	dictVals arrow.Array

	// the current data page
	left   int // values (levels) not yet decoded
	defs   hybrid
	plain  []byte // PLAIN values not yet decoded
	idx    hybrid // dictionary indices
	isDict bool

	scratch *flatScratch
	// outString says the column is decoded as a dictionary for the filter
	// but delivered as strings (outDict).
	outString bool
}

// flatScratch is a column's reusable working memory: decoded levels and
// indices of one batch, kept from one column chunk to the next
// (flatReaders).
type flatScratch struct {
	defs, idx []uint32
	// dictOff are the offsets of a byte array dictionary's values in
	// the column's dict (bytesDict): value i is dict[dictOff[i]:dictOff[i+1]].
	dictOff []uint32
	// perRow is the data bytes per row of the last batch of strings, to
	// size the next one's data.
	perRow float64
}

func (c *flatColumn) release() {
	if c.dictVals != nil {
		c.dictVals.Release()
		c.dictVals = nil
	}
}

// flatReaders are a decode worker's page readers, one for each column
// of a row group, each with the buffered stream it reads through: kept
// from one row group to the next with their buffers, which arrow-go
// would otherwise make afresh for every column chunk.
type flatReaders struct {
	pages   []file.PageReader
	streams []parquet.BufferedReader
	scratch []*flatScratch
}

// reader is the i-th page reader, reading column leaf of rg.
func (f *flatReaders) reader(i int, pf *file.Reader, props *parquet.ReaderProperties, src io.ReaderAt, g *group, leaf int) (file.PageReader, error) {
	for len(f.pages) <= i {
		f.pages = append(f.pages, nil)
		f.streams = append(f.streams, nil)
		f.scratch = append(f.scratch, new(flatScratch))
	}
	if f.pages[i] == nil {
		pr, err := pf.RowGroup(g.rg).GetColumnPageReader(leaf)
		if err != nil {
			return nil, err
		}
		f.pages[i] = pr
		return pr, nil
	}
	if f.streams[i] == nil {
		// A stream over nothing yet, with a buffer of streamBuffer.
		st, err := props.GetStream(src, 0, streamBuffer)
		if err != nil {
			return nil, err
		}
		f.streams[i] = st
	}
	cc, err := pf.MetaData().RowGroup(g.rg).ColumnChunk(leaf)
	if err != nil {
		return nil, err
	}
	// The chunk's range from the footer, not g.ranges: the bytes need
	// not all have been planned (src serves the rest by a direct read).
	r, err := chunkRange(pf.MetaData(), pf.MetaData().RowGroup(g.rg), leaf)
	if err != nil {
		return nil, err
	}
	f.streams[i].Reset(io.NewSectionReader(src, r.Off, r.Len))
	// Limits and codec as GetColumnPageReader sets them: the limits the
	// reader was made with are at least arrow-go's defaults, over which
	// no flat chunk goes.
	f.pages[i].Reset(f.streams[i], cc.NumValues(), cc.Compression(), nil)
	return f.pages[i], f.pages[i].Err()
}

func (f *flatReaders) release() {
	for _, pr := range f.pages {
		if pr != nil {
			pr.Close()
		}
	}
	f.pages, f.streams, f.scratch = nil, nil, nil
}

var errFlatCorrupt = errors.New("corrupt page")

// nextPage moves to the next data page, reading a dictionary page on
// the way.
func (c *flatColumn) nextPage() error {
	for {
		if !c.pages.Next() {
			if err := c.pages.Err(); err != nil {
				return err
			}
			return fmt.Errorf("column %s: fewer values than the row group's rows", c.name)
		}
		switch p := c.pages.Page().(type) {
		case *file.DictionaryPage:
			if err := c.readDict(p); err != nil {
				return err
			}
		case *file.DataPageV1:
			data := p.Data()
			if c.maxDef > 0 {
				if p.DefinitionLevelEncoding() != parquet.Encodings.RLE || len(data) < 4 {
					return fmt.Errorf("column %s: definition levels encoded as %s", c.name, p.DefinitionLevelEncoding())
				}
				n := int(binary.LittleEndian.Uint32(data))
				if n < 0 || n > len(data)-4 {
					return fmt.Errorf("column %s: %w (definition levels past its end)", c.name, errFlatCorrupt)
				}
				c.defs = hybrid{data: data[4 : 4+n], width: 1}
				data = data[4+n:]
			}
			return c.startValues(parquet.Encoding(p.Encoding()), int(p.NumValues()), data)
		case *file.DataPageV2:
			data := p.Data()
			if p.RepetitionLevelByteLen() != 0 {
				return fmt.Errorf("column %s: %w (repetition levels in a flat column)", c.name, errFlatCorrupt)
			}
			n := int(p.DefinitionLevelByteLen())
			if n < 0 || n > len(data) {
				return fmt.Errorf("column %s: %w (definition levels past its end)", c.name, errFlatCorrupt)
			}
			if c.maxDef > 0 {
				c.defs = hybrid{data: data[:n], width: 1}
			}
			return c.startValues(parquet.Encoding(p.Encoding()), int(p.NumValues()), data[n:])
		}
	}
}

func (c *flatColumn) startValues(enc parquet.Encoding, n int, data []byte) error {
	c.left = n
	switch enc {
	case parquet.Encodings.Plain:
		if c.kind == flatDict {
			return fmt.Errorf("column %s: a PLAIN page in a dictionary-encoded column chunk", c.name)
		}
		c.isDict, c.plain = false, data
	case parquet.Encodings.RLEDict, parquet.Encodings.PlainDict:
		if c.dictLen < 0 {
			return fmt.Errorf("column %s: %w (dictionary indices before a dictionary)", c.name, errFlatCorrupt)
		}
		if len(data) < 1 || data[0] > 32 {
			return fmt.Errorf("column %s: %w (dictionary index width)", c.name, errFlatCorrupt)
		}
		c.isDict, c.idx = true, hybrid{data: data[1:], width: uint(data[0])}
	default:
		return fmt.Errorf("column %s: data page encoded as %s", c.name, enc)
	}
	return nil
}

func (c *flatColumn) readDict(p *file.DictionaryPage) error {
	if c.dictLen >= 0 {
		return fmt.Errorf("column %s: %w (a second dictionary page)", c.name, errFlatCorrupt)
	}
	if e := parquet.Encoding(p.Encoding()); e != parquet.Encodings.Plain && e != parquet.Encodings.PlainDict {
		return fmt.Errorf("column %s: dictionary page encoded as %s", c.name, e)
	}
	n, data := int(p.NumValues()), p.Data()
	if n < 0 {
		return fmt.Errorf("column %s: %w (negative dictionary size)", c.name, errFlatCorrupt)
	}
	if c.kind == flatBytes {
		return c.bytesDict(n, data)
	}
	if c.kind != flatDict {
		w := c.width()
		if n > len(data)/w {
			return fmt.Errorf("column %s: %w (dictionary page shorter than its values)", c.name, errFlatCorrupt)
		}
		c.dict = append(c.dict[:0], data[:n*w]...)
		c.dictLen = n
		return nil
	}
	b := array.NewBinaryBuilder(c.mem, c.typ.(*arrow.DictionaryType).ValueType.(arrow.BinaryDataType))
	defer b.Release()
	b.Reserve(n)
	b.ReserveData(max(len(data)-4*n, 0))
	for range n {
		v, rest, ok := plainBytes(data)
		if !ok {
			return fmt.Errorf("column %s: %w (dictionary value past the page's end)", c.name, errFlatCorrupt)
		}
		b.Append(v)
		data = rest
	}
	c.dictVals = b.NewArray()
	c.dictLen = n
	return nil
}

// bytesDict keeps the n byte arrays of a dictionary page's data as they
// are, where each starts and ends, and copySlack bytes past the last, so
// that short values are copied a fixed width at a time (fillBytes).
func (c *flatColumn) bytesDict(n int, data []byte) error {
	off := append(c.scratch.dictOff[:0], 0)
	c.dict = c.dict[:0]
	for range n {
		v, rest, ok := plainBytes(data)
		if !ok {
			return fmt.Errorf("column %s: %w (dictionary value past the page's end)", c.name, errFlatCorrupt)
		}
		c.dict = append(c.dict, v...)
		off = append(off, uint32(len(c.dict)))
		data = rest
	}
	c.dict = append(c.dict, make([]byte, copySlack)...)
	c.scratch.dictOff = off
	c.dictLen = n
	return nil
}

func (c *flatColumn) width() int {
	if c.kind == flat8 {
		return 8
	}
	return 4
}

// read decodes the next n values as an Arrow array.
func (c *flatColumn) read(n int) (arrow.Array, error) {
	if c.kind == flatBytes {
		return c.readBytes(n)
	}
	w := c.width()
	vals := mempool.DirtyBuffer(c.mem, n*w)
	var valid *memory.Buffer
	if c.maxDef > 0 {
		valid = memory.NewResizableBuffer(c.mem)
		valid.Resize(int(bitutil.BytesForBits(int64(n))))
		clear(valid.Bytes())
	}
	nulls, err := c.fill(vals.Bytes(), valid, n)
	if err != nil {
		vals.Release()
		if valid != nil {
			valid.Release()
		}
		return nil, err
	}
	if valid != nil && nulls == 0 {
		valid.Release()
		valid = nil
	}
	var data *array.Data
	if c.kind == flatDict {
		if c.dictVals == nil {
			vals.Release()
			if valid != nil {
				valid.Release()
			}
			return nil, fmt.Errorf("column %s: %w (no dictionary)", c.name, errFlatCorrupt)
		}
		data = array.NewDataWithDictionary(c.typ, n, []*memory.Buffer{valid, vals}, nulls, 0, c.dictVals.Data().(*array.Data))
	} else {
		data = array.NewData(c.typ, n, []*memory.Buffer{valid, vals}, nil, nulls, 0)
	}
	defer data.Release()
	vals.Release()
	if valid != nil {
		valid.Release()
	}
	return array.MakeFromData(data), nil
}

// fill decodes n values into out (w bytes each), setting valid's bits
// for the values present; it returns how many are null.
func (c *flatColumn) fill(out []byte, valid *memory.Buffer, n int) (nulls int, err error) {
	w := c.width()
	for at := 0; at < n; {
		if c.left == 0 {
			if err := c.nextPage(); err != nil {
				return 0, err
			}
			continue
		}
		k := min(n-at, c.left)
		defs, present, err := c.levels(k, at, valid)
		if err != nil {
			return 0, err
		}
		// The present values, packed at the front of the slots, then
		// spread out to their rows from the back.
		dst := out[at*w : (at+k)*w]
		if err := c.values(dst[:present*w], present); err != nil {
			return 0, err
		}
		if present < k {
			j := present - 1
			for i := k - 1; i >= 0; i-- {
				if defs[i] == uint32(c.maxDef) {
					if j != i {
						copy(dst[i*w:(i+1)*w], dst[j*w:(j+1)*w])
					}
					j--
				} else {
					clear(dst[i*w : (i+1)*w])
				}
			}
			nulls += k - present
		}
		c.left -= k
		at += k
	}
	return nulls, nil
}

// readBytes decodes the next n byte arrays as an Arrow string or binary
// array: their offsets and their bytes, copied out of PLAIN pages or out
// of the dictionary.
func (c *flatColumn) readBytes(n int) (arrow.Array, error) { return c.readBytesKept(n, nil, n) }

// readBytesKept is readBytes of the kept rows alone, where keep (nil:
// every row) says which of the n are, kept in all: the others are
// decoded past and not copied. Only for a column without nulls.
func (c *flatColumn) readBytesKept(n int, keep []bool, kept int) (arrow.Array, error) {
	if keep != nil && c.maxDef != 0 {
		return nil, fmt.Errorf("column %s: rows chosen of a column with nulls", c.name)
	}
	offs := mempool.DirtyBuffer(c.mem, (kept+1)*4)
	vals := memory.NewResizableBuffer(c.mem)
	var valid *memory.Buffer
	if c.maxDef > 0 {
		valid = memory.NewResizableBuffer(c.mem)
		valid.Resize(int(bitutil.BytesForBits(int64(n))))
		clear(valid.Bytes())
	}
	release := func() {
		offs.Release()
		vals.Release()
		if valid != nil {
			valid.Release()
		}
	}
	vals.Reserve(max(int(c.scratch.perRow*float64(kept)*1.1), 64))
	nulls, size, err := c.fillBytes(arrow.Int32Traits.CastFromBytes(offs.Bytes()), vals, valid, n, keep)
	if err != nil {
		release()
		return nil, err
	}
	vals.ResizeNoShrink(size)
	if kept > 0 {
		c.scratch.perRow = float64(size) / float64(kept)
	}
	if valid != nil && nulls == 0 {
		valid.Release()
		valid = nil
	}
	data := array.NewData(c.typ, kept, []*memory.Buffer{valid, offs, vals}, nil, nulls, 0)
	release()
	defer data.Release()
	return array.MakeFromData(data), nil
}

// fillBytes decodes n byte arrays: their ends into offs[1:], their
// bytes into vals (grown as need be), valid's bits for the present
// ones. It returns how many are null and the bytes in all. With keep
// (only for a column without nulls), the rows where keep is false are
// decoded past: offs and vals hold the kept ones alone.
//
// Values of up to 64 bytes, most strings in tables, are copied as a fixed
// 16, 32 or 64 bytes (a few moves, not a call of memmove per value), which
// may write up to copySlack bytes past the value's end: vals keeps that
// much room beyond what is written, and a source is read that far past a
// value only where it holds that many more bytes.
func (c *flatColumn) fillBytes(offs []int32, vals, valid *memory.Buffer, n int, keep []bool) (nulls, size int, err error) {
	offs[0] = 0
	o := 0 // values written
	buf := vals.Buf()
	// room makes buf hold need more bytes at size, and the slack.
	room := func(need int) error {
		if size+need+copySlack <= len(buf) {
			return nil
		}
		if size+need > math.MaxInt32 {
			return fmt.Errorf("column %s: more than 2 GiB of values in a batch of %d rows", c.name, n)
		}
		vals.Reserve(max(2*len(buf), size+need+copySlack))
		buf = vals.Buf()
		return nil
	}
	for at := 0; at < n; {
		if c.left == 0 {
			if err := c.nextPage(); err != nil {
				return 0, 0, err
			}
			continue
		}
		k := min(n-at, c.left)
		defs, present, err := c.levels(k, at, valid)
		if err != nil {
			return 0, 0, err
		}
		nulls += k - present
		if c.isDict {
			// The present values' indices first, checked and their bytes
			// counted, a chunk at a time; then their values, row by row.
			dl := uint32(c.dictLen)
			off := c.scratch.dictOff
			const chunk = 1024
			for i := 0; i < k; {
				m := min(chunk, k-i)
				present := m
				if defs != nil {
					present = 0
					for _, d := range defs[i : i+m] {
						if d == uint32(c.maxDef) {
							present++
						}
					}
				}
				idx := grow(&c.scratch.idx, present)
				if !c.idx.decode(idx) {
					return 0, 0, fmt.Errorf("column %s: %w (dictionary indices)", c.name, errFlatCorrupt)
				}
				need := 0
				for _, v := range idx {
					if v >= dl {
						return 0, 0, fmt.Errorf("column %s: %w (dictionary index %d of %d)", c.name, errFlatCorrupt, v, dl)
					}
					need += int(off[v+1] - off[v]) // the kept rows' at most
				}
				if err := room(need); err != nil {
					return 0, 0, err
				}
				j := 0
				for r := i; r < i+m; r++ {
					if defs != nil && defs[r] != uint32(c.maxDef) {
						o++
						offs[o] = int32(size) // null
						continue
					}
					v := idx[j]
					j++
					if keep != nil && !keep[at+r] {
						continue
					}
					s, e := off[v], off[v+1]
					copyShort(buf[size:], c.dict[s:], int(e-s))
					size += int(e - s)
					o++
					offs[o] = int32(size)
				}
				i += m
			}
		} else {
			for r := range k {
				if defs != nil && defs[r] != uint32(c.maxDef) {
					o++
					offs[o] = int32(size) // null
					continue
				}
				v, rest, ok := plainBytes(c.plain)
				if !ok {
					return 0, 0, fmt.Errorf("column %s: %w (PLAIN value past the page's end)", c.name, errFlatCorrupt)
				}
				if keep != nil && !keep[at+r] {
					c.plain = rest
					continue
				}
				if err := room(len(v)); err != nil {
					return 0, 0, err
				}
				if src := c.plain[4:]; len(src) >= copySlack {
					copyShort(buf[size:], src, len(v))
				} else {
					copy(buf[size:], v)
				}
				size += len(v)
				c.plain = rest
				o++
				offs[o] = int32(size)
			}
		}
		c.left -= k
		at += k
	}
	return nulls, size, nil
}

// copySlack is how many bytes copyShort may read and write past a short
// value.
const copySlack = 64

// copyShort copies the first l bytes of src to dst. Both must hold at
// least max(l, copySlack) bytes: a value of up to 64 bytes is moved as a
// fixed 16, 32 or 64, which the compiler does in registers.
func copyShort(dst, src []byte, l int) {
	switch {
	case l <= 16:
		*(*[16]byte)(dst) = *(*[16]byte)(src)
	case l <= 32:
		*(*[32]byte)(dst) = *(*[32]byte)(src)
	case l <= 64:
		*(*[64]byte)(dst) = *(*[64]byte)(src)
	default:
		copy(dst[:l], src[:l])
	}
}

// plainBytes splits a PLAIN byte array (a 4-byte length, then its bytes)
// off the front of data; ok is false when data ends first.
func plainBytes(data []byte) (v, rest []byte, ok bool) {
	if len(data) < 4 {
		return nil, data, false
	}
	l := binary.LittleEndian.Uint32(data)
	if uint64(l) > uint64(len(data)-4) {
		return nil, data, false
	}
	return data[4 : 4+l], data[4+l:], true
}

// levels decodes the definition levels of the next k rows (nil for a
// required column), checks them, and sets the validity bits of the
// present rows from bit at; it returns how many rows are present.
func (c *flatColumn) levels(k, at int, valid *memory.Buffer) (defs []uint32, present int, err error) {
	if c.maxDef == 0 {
		return nil, k, nil
	}
	defs = grow(&c.scratch.defs, k)
	if !c.defs.decode(defs) {
		return nil, 0, fmt.Errorf("column %s: %w (definition levels)", c.name, errFlatCorrupt)
	}
	vb := valid.Bytes()
	for i, d := range defs {
		if d > uint32(c.maxDef) {
			return nil, 0, fmt.Errorf("column %s: %w (definition level %d)", c.name, errFlatCorrupt, d)
		}
		if d == uint32(c.maxDef) {
			bitutil.SetBit(vb, at+i)
			present++
		}
	}
	return defs, present, nil
}

// grow returns (*s)[:n], growing *s first if need be.
func grow(s *[]uint32, n int) []uint32 {
	if cap(*s) < n {
		*s = make([]uint32, n)
	}
	return (*s)[:n]
}

// values decodes the next n present values into dst.
func (c *flatColumn) values(dst []byte, n int) error {
	if n == 0 {
		return nil
	}
	w := c.width()
	if !c.isDict {
		if len(c.plain) < n*w {
			return fmt.Errorf("column %s: %w (PLAIN values past the page's end)", c.name, errFlatCorrupt)
		}
		copy(dst, c.plain[:n*w])
		c.plain = c.plain[n*w:]
		return nil
	}
	dl := uint32(c.dictLen)
	if c.kind == flatDict {
		// The indices are the output: decoded in place.
		idx := unsafeUint32s(dst)
		if !c.idx.decode(idx) {
			return fmt.Errorf("column %s: %w (dictionary indices)", c.name, errFlatCorrupt)
		}
		for _, v := range idx {
			if v >= dl {
				return fmt.Errorf("column %s: %w (dictionary index %d of %d)", c.name, errFlatCorrupt, v, dl)
			}
		}
		return nil
	}
	// Indices a few KiB at a time, each gathered while in cache.
	const chunk = 1024
	scratch := grow(&c.scratch.idx, min(n, chunk))
	for at := 0; at < n; at += chunk {
		idx := scratch[:min(chunk, n-at)]
		if !c.idx.decode(idx) {
			return fmt.Errorf("column %s: %w (dictionary indices)", c.name, errFlatCorrupt)
		}
		if w == 4 {
			d, o := unsafeUint32s(c.dict), unsafeUint32s(dst[at*4:])
			for i, v := range idx {
				if v >= dl {
					return fmt.Errorf("column %s: %w (dictionary index %d of %d)", c.name, errFlatCorrupt, v, dl)
				}
				o[i] = d[v]
			}
			continue
		}
		d, o := unsafeUint64s(c.dict), unsafeUint64s(dst[at*8:])
		for i, v := range idx {
			if v >= dl {
				return fmt.Errorf("column %s: %w (dictionary index %d of %d)", c.name, errFlatCorrupt, v, dl)
			}
			o[i] = d[v]
		}
	}
	return nil
}

// hybrid is Parquet's RLE / bit-packed hybrid encoding of small
// integers (definition levels, dictionary indices) of width bits, read
// on from where the last decode stopped.
type hybrid struct {
	data  []byte
	width uint
	// the current run: rle values of val left, or packed values left in
	// pbuf, read from data (the rest of the bit-packed groups)
	rle    int
	val    uint32
	packed int
	pbits  []byte
	bitPos uint
}

// decode fills dst; false when the data ends first or is malformed.
func (h *hybrid) decode(dst []uint32) bool {
	for len(dst) > 0 {
		if h.rle > 0 {
			k := min(h.rle, len(dst))
			v := h.val
			for i := range dst[:k] {
				dst[i] = v
			}
			h.rle -= k
			dst = dst[k:]
			continue
		}
		if h.packed > 0 {
			k := min(h.packed, len(dst))
			h.unpack(dst[:k])
			h.packed -= k
			dst = dst[k:]
			continue
		}
		if !h.header() {
			return false
		}
	}
	return true
}

// header reads the next run's header.
func (h *hybrid) header() bool {
	hdr, n := binary.Uvarint(h.data)
	if n <= 0 {
		return false
	}
	h.data = h.data[n:]
	if hdr&1 == 0 {
		count := hdr >> 1
		nb := int(h.width+7) / 8
		if count == 0 || count > 1<<31 || len(h.data) < nb {
			return false
		}
		var v uint64
		for i := range nb {
			v |= uint64(h.data[i]) << (8 * i)
		}
		h.data = h.data[nb:]
		if h.width < 32 && v>>h.width != 0 {
			return false
		}
		h.rle, h.val = int(count), uint32(v)
		return true
	}
	groups := hdr >> 1
	if groups == 0 || groups > 1<<28 {
		return false
	}
	nbytes := int(groups) * int(h.width)
	values := int(groups) * 8
	if nbytes > len(h.data) {
		// The last run may be cut short where the page's values end
		// (writers pad, but only to the values they have).
		nbytes = len(h.data)
		if h.width > 0 {
			values = min(values, nbytes*8/int(h.width))
		}
	}
	if values == 0 {
		return false
	}
	h.pbits, h.bitPos = h.data[:nbytes], 0
	h.data = h.data[nbytes:]
	h.packed = values
	if h.width == 0 {
		h.rle, h.val, h.packed = values, 0, 0
	}
	return true
}

// unpack takes len(dst) values of the current bit-packed run.
func (h *hybrid) unpack(dst []uint32) {
	w := h.width
	mask := uint64(1)<<w - 1
	src := h.pbits
	pos := h.bitPos
	i := 0
	if w <= 8 {
		// Value by value up to the next group of 8 (where the last call
		// stopped inside one); then whole groups, 8w bits each: one word.
		for ; i < len(dst) && (pos/w)%8 != 0 && int(pos>>3)+8 <= len(src); i++ {
			dst[i] = uint32((binary.LittleEndian.Uint64(src[pos>>3:]) >> (pos & 7)) & mask)
			pos += w
		}
		for ; i+8 <= len(dst) && int(pos>>3)+8 <= len(src); i += 8 {
			word := binary.LittleEndian.Uint64(src[pos>>3:])
			d := dst[i : i+8 : i+8]
			for j := range d {
				d[j] = uint32(word & mask)
				word >>= w
			}
			pos += 8 * w
		}
	}
	// A word from each value's first byte holds it (shift < 8, w <= 32),
	// while 8 bytes are left to load.
	for ; i < len(dst) && int(pos>>3)+8 <= len(src); i++ {
		dst[i] = uint32((binary.LittleEndian.Uint64(src[pos>>3:]) >> (pos & 7)) & mask)
		pos += w
	}
	for ; i < len(dst); i++ {
		var word uint64
		for j, b := range src[pos>>3:] {
			word |= uint64(b) << (8 * j)
		}
		dst[i] = uint32((word >> (pos & 7)) & mask)
		pos += w
	}
	h.bitPos = pos
}

func unsafeUint32s(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func unsafeUint64s(b []byte) []uint64 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

// flatColumns opens the flat decoders of a row group's leaves: one for
// each flat leaf, nil for the others (arrow-go decodes those), and how
// many are flat.
func (s *Scanner) flatColumns(fr *flatReaders, pf *file.Reader, props *parquet.ReaderProperties, src io.ReaderAt, g *group) ([]*flatColumn, int, error) {
	if g.file.decodeMD != nil {
		return nil, 0, nil
	}
	md := g.file.md
	rg := md.RowGroup(g.rg)
	cols := make([]*flatColumn, len(g.file.leaves))
	kinds := make([]flatKind, len(g.file.leaves))
	types := make([]arrow.DataType, len(g.file.leaves))
	allFlat := true
	for i, leaf := range g.file.leaves {
		types[i] = s.ds.decodedType(md.Schema.Column(leaf).ColumnPath()[0])
		if types[i] != nil {
			kinds[i] = flatKindOf(md, rg, leaf, types[i])
		}
		allFlat = allFlat && kinds[i] != flatNone
	}
	n := 0
	for i, leaf := range g.file.leaves {
		path := md.Schema.Column(leaf).ColumnPath()
		typ, kind := types[i], kinds[i]
		if typ == nil {
			continue
		}
		outString := false
		if dt := s.ds.filterDict(path[0], typ); dt != nil && flatKindOf(md, rg, leaf, dt) == flatDict {
			typ, kind = dt, flatDict
			s.c.filterDicts.Add(1)
		} else if dt := s.ds.outDict(path[0], typ); dt != nil && allFlat && md.Schema.Column(leaf).MaxDefinitionLevel() == 0 &&
			flatKindOf(md, rg, leaf, dt) == flatDict {
			// Only where decodeLate turns it back into strings.
			typ, kind, outString = dt, flatDict, true
			s.c.filterDicts.Add(1)
		}
		if kind == flatNone {
			continue
		}
		pr, err := fr.reader(i, pf, props, src, g, leaf)
		if err != nil {
			for _, c := range cols {
				if c != nil {
					c.release()
				}
			}
			return nil, 0, err
		}
		cols[i] = &flatColumn{pages: pr, scratch: fr.scratch[i], kind: kind, typ: typ, maxDef: md.Schema.Column(leaf).MaxDefinitionLevel(),
			mem: s.ds.opts.Mem, name: path[0], dictLen: -1, outString: outString}
		n++
	}
	return cols, n, nil
}

// filterDict is the type to decode a string column only the filter
// reads as where its chunk is all dictionary encoded: a dictionary, so
// that its tests look at each entry once (expr's byEntry) and no row's
// string is copied out; nil for any other column.
func (d *Dataset) filterDict(name string, typ arrow.DataType) arrow.DataType {
	if typ.ID() != arrow.STRING {
		return nil
	}
	if _, out := d.schema.FieldsByName(name); out {
		return nil
	}
	return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: typ}
}

// outDict is the type to decode a string column that the filter reads
// and the scan delivers as, where its chunk is all dictionary encoded: a
// dictionary, which the filter tests once per entry and decodeLate then
// turns into the strings of the kept rows alone; nil for any other.
func (d *Dataset) outDict(name string, typ arrow.DataType) arrow.DataType {
	if typ.ID() != arrow.STRING || d.filterSchema == nil || d.filterSchema.FieldIndices(name) == nil {
		return nil
	}
	return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: typ}
}

// dictStrings is the string array of a dictionary of strings' rows in
// runs, kept in all; the dictionary has no nulls (a column of a file
// without them).
func dictStrings(mem memory.Allocator, a arrow.Array, runs []rowRun, kept int) (arrow.Array, error) {
	d, ok := a.(*array.Dictionary)
	if !ok || d.NullN() != 0 {
		return nil, fmt.Errorf("dictionary of strings expected, got %s", a.DataType())
	}
	idx := d.Indices().(*array.Int32).Int32Values()
	vals := d.Dictionary().(*array.String)
	voff := vals.ValueOffsets()
	var vdata []byte
	if bufs := vals.Data().Buffers(); len(bufs) > 2 && bufs[2] != nil {
		vdata = bufs[2].Bytes()
	}
	total := 0
	for _, r := range runs {
		for _, j := range idx[r.start : r.start+r.n] {
			total += int(voff[j+1] - voff[j])
		}
	}
	if total > math.MaxInt32 {
		return nil, fmt.Errorf("more than 2 GiB of strings in a batch of %d rows", len(idx))
	}
	offs := mempool.DirtyBuffer(mem, (kept+1)*4)
	data := mempool.DirtyBuffer(mem, total)
	o := arrow.Int32Traits.CastFromBytes(offs.Bytes())
	out := data.Bytes()
	o[0] = 0
	k, size := 0, int32(0)
	for _, r := range runs {
		for _, j := range idx[r.start : r.start+r.n] {
			size += int32(copy(out[size:], vdata[voff[j]:voff[j+1]]))
			k++
			o[k] = size
		}
	}
	ad := array.NewData(vals.DataType(), kept, []*memory.Buffer{nil, offs, data}, nil, 0, 0)
	offs.Release()
	data.Release()
	defer ad.Release()
	return array.MakeFromData(ad), nil
}

// decodedType is the type a file column is decoded as: the dataset's,
// or the filter's for a column only the filter reads; nil for neither.
func (d *Dataset) decodedType(name string) arrow.DataType {
	if f, ok := d.schema.FieldsByName(name); ok {
		return f[0].Type
	}
	if d.filterSchema != nil {
		if f, ok := d.filterSchema.FieldsByName(name); ok {
			return f[0].Type
		}
	}
	return nil
}
