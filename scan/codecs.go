package scan

import "github.com/apache/arrow-go/v18/parquet/compress"

// Some writers (datapage_v2_empty_datapage.snappy.parquet) store a page
// whose values take no bytes at all, compressed as zero bytes rather than
// as the codec's encoding of nothing; arrow-go v18.8 hands those zero
// bytes to the codec, which refuses them ("s2: corrupt input"). DuckDB
// and pyarrow read such a page as empty. arrow-go looks codecs up in a
// process-wide registry, so each is wrapped once here to decode empty
// input as empty output and otherwise do exactly what it did.
func init() {
	for _, c := range []compress.Compression{
		compress.Codecs.Snappy, compress.Codecs.Gzip, compress.Codecs.Brotli,
		compress.Codecs.Zstd, compress.Codecs.Lz4Raw,
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
