package exec

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestKeyList pushes keys of every size, empty ones and ones past a
// chunk among them, over several chunks, and reads each back.
func TestKeyList(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	m := &tableMem{mem: mem}
	defer m.release()
	l := newKeyList(m)
	r := rand.New(rand.NewPCG(1, 2))
	var want [][]byte
	for i := range 20000 {
		n := r.IntN(300)
		switch i {
		case 7:
			n = 0
		case 5000:
			n = keyChunk + 3
		}
		k := make([]byte, n)
		for j := range k {
			k[j] = byte(r.Uint32())
		}
		want = append(want, k)
		l.push(string(k))
	}
	if l.len() != len(want) {
		t.Fatalf("%d keys, want %d", l.len(), len(want))
	}
	if len(l.chunks) < 3 {
		t.Fatalf("%d chunks: the keys should span several", len(l.chunks))
	}
	for i, k := range want {
		if !bytes.Equal(l.bytes(i), k) {
			t.Fatalf("key %d: %d bytes read back differ from the %d pushed", i, len(l.bytes(i)), len(k))
		}
	}
}
