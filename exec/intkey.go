package exec

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// intGroupRows is groupRows for a batch grouped by one integer-like key
// column (integers, dates, times, timestamps, durations) with no nulls, as
// sum-by pickup_date is: a row's group is looked up by its value, and the
// groups' keys are their values (intKeyStrings makes their key bytes),
// instead of encoding every row's key and hashing the bytes. The groups
// and the order they are first seen in are those groupRows gives. It
// reports false, having done nothing, when the batch does not qualify.
// sc, kept by the caller from batch to batch (nil: none), holds the
// lookup table.
func intGroupRows(k *keyEncoder, rec arrow.RecordBatch, keep []bool, gids []int32, keys *[]int64, sc *intGroups) bool {
	if len(k.cols) != 1 {
		return false
	}
	col := rec.Column(k.cols[0].idx)
	if col.NullN() > 0 || col.Len() != len(gids) {
		return false
	}
	switch a := col.(type) {
	case *array.Int8:
		groupInts(sc, a.Int8Values(), keep, gids, keys)
	case *array.Int16:
		groupInts(sc, a.Int16Values(), keep, gids, keys)
	case *array.Int32:
		groupInts(sc, a.Int32Values(), keep, gids, keys)
	case *array.Int64:
		groupInts(sc, a.Int64Values(), keep, gids, keys)
	case *array.Uint8:
		groupInts(sc, a.Uint8Values(), keep, gids, keys)
	case *array.Uint16:
		groupInts(sc, a.Uint16Values(), keep, gids, keys)
	case *array.Uint32:
		groupInts(sc, a.Uint32Values(), keep, gids, keys)
	case *array.Uint64:
		groupInts(sc, a.Uint64Values(), keep, gids, keys)
	case *array.Date32:
		groupInts(sc, a.Date32Values(), keep, gids, keys)
	case *array.Date64:
		groupInts(sc, a.Date64Values(), keep, gids, keys)
	case *array.Timestamp:
		groupInts(sc, a.TimestampValues(), keep, gids, keys)
	case *array.Time32:
		groupInts(sc, a.Time32Values(), keep, gids, keys)
	case *array.Time64:
		groupInts(sc, a.Time64Values(), keep, gids, keys)
	case *array.Duration:
		groupInts(sc, a.DurationValues(), keep, gids, keys)
	default:
		return false
	}
	return true
}

// intGroups is what intGroupRows keeps from one batch to the next: an
// integer table, emptied for each batch, where a map made for each batch
// grew from nothing every time (a fifth of TPC-H Q18's CPU: its 64 k-row
// batches have 16 k groups each), and the last batch's groups, which
// size the next one's list of keys.
type intGroups struct {
	t    *intTable
	last int
}

// table is sc's table, empty; sc may be nil.
func (sc *intGroups) table(rows int) *intTable {
	if sc == nil {
		return newIntTable(&tableMem{mem: memory.DefaultAllocator}, min(rows, 1<<10))
	}
	if sc.t == nil {
		sc.t = newIntTable(&tableMem{mem: memory.DefaultAllocator}, max(sc.last, min(rows, 1<<10)))
	} else {
		sc.t.reset()
	}
	return sc.t
}

func groupInts[T intLike](sc *intGroups, vals []T, keep []bool, gids []int32, keys *[]int64) {
	vals = vals[:len(gids)]
	index := sc.table(len(vals))
	if sc != nil && *keys == nil {
		*keys = make([]int64, 0, sc.last)
	}
	var prev int64
	prevG := int32(-1)
	for i, v := range vals {
		if keep != nil && !keep[i] {
			gids[i] = -1
			continue
		}
		x := int64(v)
		if prevG >= 0 && x == prev {
			gids[i] = prevG
			continue
		}
		g, ok := index.get(x)
		if !ok {
			g = int32(len(*keys))
			index.put(x, g)
			*keys = append(*keys, x)
		}
		gids[i], prev, prevG = g, x, g
	}
	if sc != nil {
		sc.last = len(*keys)
	}
}

// intKey is the key bytes of an integer key x (see key.go): a 1, then
// its 8 bytes.
func intKey(x int64) [9]byte {
	var k [9]byte
	k[0] = 1
	binary.LittleEndian.PutUint64(k[1:], uint64(x))
	return k
}

// intKeyStrings are the key bytes of the integer keys ints.
func intKeyStrings(ints []int64) []string {
	out := make([]string, len(ints))
	var arena keyArena
	for i, x := range ints {
		k := intKey(x)
		out[i] = arena.str(k[:])
	}
	return out
}
