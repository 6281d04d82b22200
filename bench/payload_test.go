package bench

import (
	"bytes"
	"compress/flate"
	"testing"
)

func TestPayloadReproducibleAcrossChunks(t *testing.T) {
	p := NewPayload(7)
	whole := make([]byte, 300_001)
	p.Fill(whole, 3, 12345)
	// The same bytes cut at odd boundaries, straddling blocks.
	parts := make([]byte, 0, len(whole))
	off := int64(12345)
	for _, n := range []int{1, 7, 65535, 100_000, 3, 134_455} {
		buf := make([]byte, n)
		p.Fill(buf, 3, off)
		parts = append(parts, buf...)
		off += int64(n)
	}
	if !bytes.Equal(whole, parts) {
		t.Fatal("filling in chunks differs from filling at once")
	}
	again := make([]byte, len(whole))
	NewPayload(7).Fill(again, 3, 12345)
	if !bytes.Equal(whole, again) {
		t.Fatal("same seed, object and offset gave different bytes")
	}
}

func TestPayloadDistinctAndIncompressible(t *testing.T) {
	p := NewPayload(1)
	a, b := make([]byte, 1<<20), make([]byte, 1<<20)
	p.Fill(a, 0, 0)
	p.Fill(b, 1, 0)
	if bytes.Equal(a[:payloadBlock], b[:payloadBlock]) {
		t.Fatal("objects 0 and 1 start with the same block")
	}
	if bytes.Equal(a[:payloadBlock], a[payloadBlock:2*payloadBlock]) {
		t.Fatal("blocks 0 and 1 of an object are the same")
	}
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, flate.BestCompression)
	_, _ = w.Write(append(a, b...))
	_ = w.Close()
	if ratio := float64(z.Len()) / float64(2*len(a)); ratio < 0.99 {
		t.Fatalf("payload compresses to %.3f of its size; want incompressible", ratio)
	}
}

// BenchmarkPayloadFill is the generator's speed on one core: it has to
// stay far above any store's per-stream rate, or the put figures measure it.
func BenchmarkPayloadFill(b *testing.B) {
	p := NewPayload(1)
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p.Fill(buf, uint64(i), int64(i%64)<<20)
	}
}
