package exec

import (
	"math/rand/v2"
	"testing"
)

// TestIntTable: what a map says, for keys in runs, spread and colliding
// alike, found and missing.
func TestIntTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ n, sized int }{{0, 0}, {1, 1}, {5, 5}, {1000, 1000}, {100000, 100000}, {100000, 16}, {1000, 0}} {
		n := c.n
		want := map[int64]int32{}
		arrays := &tableMem{mem: checkedMem(t)}
		defer arrays.release()
		tab := newIntTable(arrays, c.sized) // sized below n: it grows
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
				t.Fatalf("n=%d sized for %d: key %d: %d, %v; want %d", n, c.sized, k, got, ok, r)
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
		if 2*tab.n > len(tab.keys) || tab.n != len(want) {
			t.Fatalf("n=%d sized for %d: %d keys counted (%d put) in %d slots", n, c.sized, tab.n, len(want), len(tab.keys))
		}
	}
}
