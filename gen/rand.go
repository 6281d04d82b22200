package gen

import (
	"math/bits"
	"math/rand/v2"
)

// Stream ids keep the random sources of one file independent of each
// other, so that adding a draw to one column never shifts another.
const (
	tableLineitem uint64 = 1
	tableTaxi     uint64 = 2
	tableRegion   uint64 = 3
	tableNation   uint64 = 4
	tableSupplier uint64 = 5
	tableCustomer uint64 = 6
	tablePart     uint64 = 7
	tablePartsupp uint64 = 8
	tableOrders   uint64 = 9

	streamValues uint64 = 1
	streamOrders uint64 = 2
)

// rng is a PCG source with the few draws the generators need. Draws are
// by multiply-shift without rejection: the bias is below n/2^64, and a
// fixed number of source steps per draw keeps the hot loops branch-free.
type rng struct{ p rand.PCG }

// newRNG seeds the source of one stream of one file of one table.
func newRNG(seed, table uint64, file int, stream uint64) *rng {
	hi := splitmix(seed ^ splitmix(table))
	lo := splitmix(hi ^ splitmix(uint64(file)<<8|stream))
	r := &rng{}
	r.p.Seed(hi, lo)
	return r
}

// splitmix is the SplitMix64 finalizer: a bijective mixer that spreads
// nearby inputs (file 0, 1, 2...) over the whole seed space.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// n returns a uniform value in [0, k).
func (r *rng) n(k uint64) uint64 {
	hi, _ := bits.Mul64(r.p.Uint64(), k)
	return hi
}

// picker draws from a discrete distribution by table lookup: each value
// appears as often as its weight, so a draw is one multiply and one load.
type picker[T any] []T

func newPicker[T any](values []T, weights []int) picker[T] {
	var p picker[T]
	for i, v := range values {
		for range weights[i] {
			p = append(p, v)
		}
	}
	return p
}

func (p picker[T]) pick(r *rng) T { return p[r.n(uint64(len(p)))] }
