package scan

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/pierrec/lz4/v4"
)

// Two gaps in arrow-go v18.8's codecs, filled in its process-wide codec
// registry (arrow-go looks codecs up there by the column chunk's codec):
//
//   - Some writers (datapage_v2_empty_datapage.snappy.parquet) store a
//     page whose values take no bytes at all, compressed as zero bytes
//     rather than as the codec's encoding of nothing; arrow-go hands those
//     zero bytes to the codec, which refuses them ("s2: corrupt input").
//     DuckDB and pyarrow read such a page as empty, so each codec is
//     wrapped to decode empty input as empty output and otherwise do
//     exactly what it did.
//   - The deprecated LZ4 codec has no implementation ("compression for LZ4
//     unimplemented"), because writers disagreed on its framing: parquet-mr
//     (through Hadoop's Lz4Codec) and Arrow C++ write Hadoop's frames,
//     older parquet-cpp a bare LZ4 block. lz4Codec reads both, as Arrow
//     C++ does: Hadoop's frames when the bytes parse as such, else one
//     block.
func init() {
	compress.RegisterCodec(compress.Codecs.Lz4, lz4Codec{})
	for _, c := range []compress.Compression{
		compress.Codecs.Snappy, compress.Codecs.Gzip, compress.Codecs.Brotli,
		compress.Codecs.Zstd, compress.Codecs.Lz4Raw, compress.Codecs.Lz4,
	} {
		codec, err := compress.GetCodec(c)
		if err != nil {
			continue
		}
		compress.RegisterCodec(c, emptyPageCodec{codec})
	}
}

type emptyPageCodec struct{ compress.Codec }

func (c emptyPageCodec) Decode(dst, src []byte) []byte {
	if len(src) == 0 {
		return dst[:0]
	}
	return c.Codec.Decode(dst, src)
}

func (c emptyPageCodec) DecodeWithError(dst, src []byte) ([]byte, error) {
	if len(src) == 0 {
		return dst[:0], nil
	}
	return compress.Decode(c.Codec, dst, src)
}

// lz4Codec is Parquet's LZ4 codec. A Hadoop frame is a big-endian uint32
// decompressed size, a big-endian uint32 compressed size, and that many
// bytes of one LZ4 block; a page is any number of frames. It writes one
// frame, as Arrow C++ does.
type lz4Codec struct{}

const hadoopPrefix = 8

func (lz4Codec) DecodeWithError(dst, src []byte) ([]byte, error) {
	if n, ok := decodeHadoop(dst, src); ok {
		return dst[:n], nil
	}
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return nil, err
	}
	return dst[:n], nil
}

// decodeHadoop decodes src as Hadoop's frames into dst, reporting false
// when src is not made of frames that fill dst exactly so far.
func decodeHadoop(dst, src []byte) (int, bool) {
	total := 0
	for len(src) >= hadoopPrefix {
		raw := int64(binary.BigEndian.Uint32(src))
		packed := int64(binary.BigEndian.Uint32(src[4:]))
		src = src[hadoopPrefix:]
		if packed > int64(len(src)) || raw > int64(len(dst)-total) {
			return 0, false
		}
		n, err := lz4.UncompressBlock(src[:packed], dst[total:total+int(raw)])
		if err != nil || int64(n) != raw {
			return 0, false
		}
		src = src[packed:]
		total += n
	}
	return total, len(src) == 0
}

// Decode is DecodeWithError for arrow-go's older interface, which
// reports errors by panicking.
func (c lz4Codec) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

func (c lz4Codec) Encode(dst, src []byte) []byte {
	bound := int(c.CompressBound(int64(len(src))))
	if cap(dst) < bound {
		dst = make([]byte, bound)
	}
	dst = dst[:bound]
	n, err := lz4.CompressBlock(src, dst[hadoopPrefix:], nil)
	if err != nil {
		panic(err)
	}
	binary.BigEndian.PutUint32(dst, uint32(len(src)))
	binary.BigEndian.PutUint32(dst[4:], uint32(n))
	return dst[:hadoopPrefix+n]
}

func (c lz4Codec) EncodeLevel(dst, src []byte, _ int) []byte { return c.Encode(dst, src) }

func (lz4Codec) CompressBound(n int64) int64 {
	return hadoopPrefix + int64(lz4.CompressBlockBound(int(n)))
}
