package scan

import (
	"bytes"
	"testing"
)

// FuzzLZ4 feeds the LZ4 codec arbitrary pages: decoding returns an error
// or at most the bytes asked for, never panics; and whatever it encodes
// it decodes to the same bytes.
func FuzzLZ4(f *testing.F) {
	frame := lz4Codec{}.Encode(nil, bytes.Repeat([]byte("sluice "), 40))
	f.Add(frame, uint16(280))
	f.Add(frame[8:], uint16(280))               // the bare block
	f.Add(append(frame, frame...), uint16(560)) // two frames
	f.Add(frame[:len(frame)-3], uint16(280))
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 1, 0x50}, uint16(5))
	f.Fuzz(func(t *testing.T, src []byte, n uint16) {
		dst := make([]byte, n)
		if out, err := (lz4Codec{}).DecodeWithError(dst, src); err == nil && len(out) > len(dst) {
			t.Fatalf("decoded %d bytes into %d", len(out), len(dst))
		}
		enc := lz4Codec{}.Encode(nil, src)
		dec, err := lz4Codec{}.DecodeWithError(make([]byte, len(src)), enc)
		if err != nil || !bytes.Equal(dec, src) {
			t.Fatalf("round trip of %d bytes: %v", len(src), err)
		}
	})
}
