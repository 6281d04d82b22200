package exec

import (
	"math"
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
		if full(tab.n, len(tab.slots)) || tab.n != len(want) {
			t.Fatalf("n=%d sized for %d: %d keys counted (%d put) in %d slots", n, c.sized, tab.n, len(want), len(tab.slots))
		}
	}
}

// TestKeyIndex: what a map of key bytes says, for keys of one and two
// integers (looked up as integers), keys that have those lengths but not
// their shape, short keys and long ones, growing from small tables.
func TestKeyIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	want := map[string]int32{}
	x := newKeyIndex(nil, 0)
	key := func() string {
		b := make([]byte, []int{9, 18, 18, 9, 5, 16, 17, 30}[rng.IntN(8)])
		for i := range b {
			b[i] = byte(rng.IntN(3)) // few values: keys repeat and collide
		}
		// Key bytes are self-delimiting: none is another zero-padded.
		// A last byte never zero keeps that so here.
		b[len(b)-1] = byte(1 + rng.IntN(2))
		switch rng.IntN(3) {
		case 0: // an integer or two, as key.go writes them
			b[0] = 1
			if len(b) == 18 {
				b[9] = 1
			}
		case 1: // the length, but not the shape
			b[0] = 0
		}
		return string(b)
	}
	for i := range 200000 {
		k := key()
		if g, ok := x.get(k); ok != (want[k] != 0) || ok && g != want[k]-1 {
			t.Fatalf("key %x: %d, %v; want %d", k, g, ok, want[k]-1)
		}
		if _, in := want[k]; !in {
			want[k] = int32(i) + 1
			x.put(k, int32(i))
		}
	}
	if x.ints.n == 0 || x.pairs.n == 0 || len(x.short) == 0 || len(x.long) == 0 {
		t.Fatalf("a kind of key went untested: %d ints, %d pairs, %d short, %d long", x.ints.n, x.pairs.n, len(x.short), len(x.long))
	}
	for k, g := range want {
		if got, ok := x.get(k); !ok || got != g-1 {
			t.Fatalf("key %x: %d, %v; want %d", k, got, ok, g-1)
		}
	}
}

// TestIntTableBits: a table's bitmap (withBits) says every key it holds
// may be there and each key it does not hold is not, for keys near the
// ends of int64 too; keys spread wider than 64 values a slot get none,
// and mayHave then defers to the table.
func TestIntTableBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		name     string
		keys     []int64
		wantBits bool
	}{
		{"order keys, one in seven", func() (ks []int64) {
			for k := int64(1); k < 600_000; k += 1 + rng.Int64N(12) {
				ks = append(ks, k)
			}
			return
		}(), true},
		{"negative", []int64{-5, -3, -1, 0, 7, 100}, true},
		{"at the top", []int64{math.MaxInt64, math.MaxInt64 - 70, math.MaxInt64 - 3}, true},
		{"at the bottom", []int64{math.MinInt64, math.MinInt64 + 64, math.MinInt64 + 129}, true},
		{"both ends", []int64{math.MinInt64, 0, math.MaxInt64}, false},
		{"spread", []int64{1, 1 << 40, 1 << 50}, false},
		{"few, over a small span", []int64{3, 1 << 20, smallBits - 1, smallBits + 2}, true},
		{"few, over a span past smallBits", []int64{3, smallBits + 4}, false},
	} {
		arrays := &tableMem{mem: checkedMem(t)}
		tab := newIntTable(arrays, len(c.keys))
		in := map[int64]bool{}
		for i, k := range c.keys {
			tab.put(k, int32(i))
			in[k] = true
		}
		tab.withBits()
		if got := tab.bits != nil; got != c.wantBits {
			t.Fatalf("%s: bitmap %v, want %v", c.name, got, c.wantBits)
		}
		for k := range in {
			if !tab.mayHave(k) {
				t.Fatalf("%s: key %d is in the table, the bitmap says not", c.name, k)
			}
		}
		// Keys beside each held one, and far from all of them.
		var probe []int64
		for k := range in {
			probe = append(probe, k-1, k+1, k+64, k-64)
		}
		probe = append(probe, math.MinInt64, math.MaxInt64, 0, rng.Int64())
		for _, k := range probe {
			if in[k] {
				continue
			}
			if c.wantBits && tab.mayHave(k) {
				t.Fatalf("%s: key %d is not in the table, the bitmap says it may be", c.name, k)
			}
			if !c.wantBits && !tab.mayHave(k) {
				t.Fatalf("%s: no bitmap, yet mayHave(%d) is false", c.name, k)
			}
		}
		tab.reset()
		if tab.bits != nil || !tab.mayHave(c.keys[0]) {
			t.Fatalf("%s: reset kept the bitmap", c.name)
		}
		arrays.release()
	}
}
