package exec

import (
	"math/rand/v2"
	"testing"
)

// TestIntTable: what a map says, for keys in runs, spread and colliding
// alike, found and missing.
func TestIntTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 5, 1000, 100000} {
		want := map[int64]int32{}
		arrays := &tableMem{mem: checkedMem(t)}
		defer arrays.release()
		tab := newIntTable(arrays, n)
		for i := range n {
			var k int64
			switch i % 3 {
			case 0:
				k = int64(i)
			case 1:
				k = rng.Int64() - 1<<62
			default:
				k = int64(i) << 32 // the same low bits
			}
			want[k] = int32(i)
			tab.put(k, int32(i))
		}
		for k, r := range want {
			if got, ok := tab.get(k); !ok || got != r {
				t.Fatalf("n=%d: key %d: %d, %v; want %d", n, k, got, ok, r)
			}
		}
		for range 1000 {
			k := rng.Int64()
			if _, in := want[k]; in {
				continue
			}
			if _, ok := tab.get(k); ok {
				t.Fatalf("n=%d: key %d found, never put", n, k)
			}
		}
	}
}
