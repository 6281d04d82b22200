package ipccheck

import (
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
)

// Block is where one message lies in an Arrow IPC file: its offset and
// its length, metadata and body.
type Block struct{ Off, Len int64 }

// FooterBlocks reads the Footer table's dictionary and record batch
// blocks (Block structs of offset, metadata length, body length), each
// of which must lie in [8, limit).
func FooterBlocks(footer []byte, limit int64) (dicts, recs []Block, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid footer: %v", r)
		}
	}()
	w := &walk{buf: footer, budget: len(footer)}
	t := w.table(flatbuffers.GetUOffsetT(footer))
	read := func(slot int) []Block {
		start, n := w.vector(t, slot, 24)
		out := make([]Block, 0, n)
		for k := range n {
			at := start + flatbuffers.UOffsetT(24*k)
			off, meta, body := t.GetInt64(at), int64(t.GetInt32(at+8)), t.GetInt64(at+16)
			if off < 8 || meta <= 0 || body < 0 || off > limit || meta > limit-off || body > limit-off-meta {
				w.fail("a block of %d + %d bytes at %d of a file body ending at %d", meta, body, off, limit)
				return nil
			}
			out = append(out, Block{off, meta + body})
		}
		return out
	}
	dicts, recs = read(2), read(3)
	if w.err != nil {
		return nil, nil, w.err
	}
	return dicts, recs, nil
}
