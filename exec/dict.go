package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// maxDictCodes bounds the table dictGroupRows looks groups up in: the
// product of the key columns' dictionary sizes.
const maxDictCodes = 1 << 16

// dictGroupRows is groupRows for a batch whose key columns are all
// dictionary arrays with int32 indices and no nulls (as scan --dict reads
// low-cardinality strings): a row's group is found from its combination
// of indices in a small table rather than by hashing its key bytes. The
// key bytes of each group, and the order groups are first seen in, are
// those groupRows gives, so the aggregation's result is the same. It
// reports false, having done nothing, when the batch does not qualify.
func dictGroupRows(k *keyEncoder, rec arrow.RecordBatch, keep []bool, gids []int32, keys *[]string) bool {
	type dictCol struct {
		idx    []int32
		pieces [][]byte // each dictionary value's key bytes
		stride int
	}
	cols := make([]dictCol, len(k.cols))
	codes := 1
	for ci, c := range k.cols {
		d, ok := rec.Column(c.idx).(*array.Dictionary)
		if !ok || d.NullN() > 0 {
			return false
		}
		ix, ok := d.Indices().(*array.Int32)
		vals := d.Dictionary()
		if !ok || vals.NullN() > 0 || vals.Len() == 0 {
			return false
		}
		vc, ok := keyColFor(vals.DataType())
		if !ok {
			return false
		}
		n := vals.Len()
		sizes := make([]int, n)
		vc.size(vals, sizes)
		pos := make([]int, n)
		total := 0
		for i, s := range sizes {
			pos[i] = total
			total += s
		}
		buf := make([]byte, total)
		start := append([]int(nil), pos...)
		vc.enc(vals, buf, pos)
		pieces := make([][]byte, n)
		for i := range pieces {
			pieces[i] = buf[start[i]:pos[i]]
		}
		if codes > maxDictCodes/n {
			return false
		}
		cols[ci] = dictCol{idx: ix.Int32Values(), pieces: pieces, stride: codes}
		codes *= n
	}
	// Indices out of their dictionary's range would be a corrupt batch;
	// leave those to the general path, which reports them.
	for _, c := range cols {
		n := int32(len(c.pieces))
		for _, x := range c.idx[:len(gids)] {
			if x < 0 || x >= n {
				return false
			}
		}
	}
	table := make([]int32, codes)
	for i := range table {
		table[i] = -1
	}
	var key []byte
	var arena keyArena
	for i := range gids {
		if keep != nil && !keep[i] {
			gids[i] = -1
			continue
		}
		code := 0
		for _, c := range cols {
			code += int(c.idx[i]) * c.stride
		}
		g := table[code]
		if g < 0 {
			key = key[:0]
			for _, c := range cols {
				key = append(key, c.pieces[c.idx[i]]...)
			}
			g = int32(len(*keys))
			table[code] = g
			*keys = append(*keys, arena.str(key))
		}
		gids[i] = g
	}
	return true
}
