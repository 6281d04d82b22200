package exec

// keyList is a fold's group keys, in the order they were added: their
// bytes in chunks, and where each key starts and how long it is, all in
// the buffers of m. It holds no pointer the collector must follow. As a
// []string of 1.5 M keys (TPC-H Q18), the collector scanned every header
// at each cycle and each doubling copied them all, a fifth of the fold.
type keyList struct {
	m      *tableMem
	chunks [][]byte
	at     []int64 // a key's chunk << 32 | its offset in it
	size   []int32
	// room is what is left of the last chunk.
	room []byte
}

// keyChunk is the size of the chunks keys are copied into.
const keyChunk = 1 << 20

func newKeyList(m *tableMem) *keyList { return &keyList{m: m} }

func (l *keyList) len() int { return len(l.at) }

// push adds a copy of k.
func (l *keyList) push(k string) {
	if len(k) > len(l.room) || len(l.chunks) == 0 {
		c := tableSlice[byte](l.m, max(keyChunk, len(k)))
		l.chunks = append(l.chunks, c)
		l.room = c
	}
	n := len(l.at)
	l.at = growIn(l.m, l.at, n+1)
	l.size = growIn(l.m, l.size, n+1)
	c := l.chunks[len(l.chunks)-1]
	l.at[n] = int64(len(l.chunks)-1)<<32 | int64(len(c)-len(l.room))
	l.size[n] = int32(len(k))
	l.room = l.room[copy(l.room, k):]
}

// bytes is the i-th key, valid while the list's buffers are (until m is
// released).
func (l *keyList) bytes(i int) []byte {
	c := l.chunks[l.at[i]>>32]
	o := int(uint32(l.at[i]))
	return c[o : o+int(l.size[i])]
}
