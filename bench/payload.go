package bench

import (
	"crypto/subtle"
	"encoding/binary"
	"math/rand/v2"
)

const (
	// payloadSource is the random material every object is cut from. It is
	// made once per run; 8 MiB fills quickly and fits in cache levels that
	// keep the XOR below at several GiB/s a core.
	payloadSource = 8 << 20
	// payloadBlock is the unit that gets its own pair of source offsets.
	payloadBlock = 64 << 10
)

// Payload generates the bytes of benchmark objects: pseudorandom,
// incompressible, different for every object and block, and reproducible
// from (seed, object, offset) so any byte range can be regenerated
// without keeping the object.
//
// Each 64 KiB block of an object is the XOR of two slices of one random
// source at offsets drawn from a hash of (seed, object, block). The XOR of
// independent random bytes is random, and the work per byte is one SIMD
// XOR, so generation runs far faster than any store it feeds.
type Payload struct {
	seed uint64
	src  []byte
}

// NewPayload makes the random source for seed. It is safe for concurrent
// use once made.
func NewPayload(seed uint64) *Payload {
	r := rand.NewChaCha8(seedBytes(seed))
	src := make([]byte, payloadSource+payloadBlock)
	_, _ = r.Read(src)
	return &Payload{seed: seed, src: src}
}

func seedBytes(seed uint64) [32]byte {
	var s [32]byte
	for i := range 4 {
		binary.LittleEndian.PutUint64(s[i*8:], splitmix(seed+uint64(i)))
	}
	return s
}

// Fill writes into dst the bytes of object at offset off.
func (p *Payload) Fill(dst []byte, object uint64, off int64) {
	for len(dst) > 0 {
		block, in := off/payloadBlock, int(off%payloadBlock)
		n := min(len(dst), payloadBlock-in)
		h := splitmix(p.seed ^ splitmix(object^splitmix(uint64(block))))
		a := int(h%payloadSource) + in
		b := int(splitmix(h)%payloadSource) + in
		subtle.XORBytes(dst[:n], p.src[a:a+n], p.src[b:b+n])
		dst, off = dst[n:], off+int64(n)
	}
}

// splitmix is the SplitMix64 finalizer: a bijective mixer that spreads
// nearby inputs (object 0, 1, 2...) over the whole range.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
