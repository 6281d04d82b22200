package exec

import "github.com/sluice-data/sluice/mempool"

// dirtyPool is a mempool.Pool whose free buffers of every size class up
// to 4 MiB are full of 0xff, as buffers released by earlier batches are.
func dirtyPool() *mempool.Pool {
	p := mempool.New(0)
	var bufs [][]byte
	for size := 4 << 10; size <= 4<<20; size <<= 1 {
		for range 4 {
			b := p.Allocate(size)
			for i := range b {
				b[i] = 0xff
			}
			bufs = append(bufs, b)
		}
	}
	for _, b := range bufs {
		p.Free(b)
	}
	return p
}
