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
	p    *pairTable
	last int
	// cols hold two key columns' values widened (pairGroupRows).
	cols [2][]int64
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

// pairGroupRows is intGroupRows for a batch grouped by two integer-like
// key columns with no nulls (TPC-H Q20's l_partkey, l_suppkey), looked
// up as pairs in a pairTable: keys holds each group's two values in turn.
func pairGroupRows(k *keyEncoder, rec arrow.RecordBatch, keep []bool, gids []int32, keys *[]int64, sc *intGroups) bool {
	if len(k.cols) != 2 {
		return false
	}
	if sc == nil {
		sc = &intGroups{}
	}
	var cols [2][]int64
	for c := range cols {
		col := rec.Column(k.cols[c].idx)
		if col.NullN() > 0 || col.Len() != len(gids) {
			return false
		}
		v, ok := intColumn(col, &sc.cols[c])
		if !ok {
			return false
		}
		cols[c] = v
	}
	if sc.p == nil {
		sc.p = newPairTable(&tableMem{mem: memory.DefaultAllocator}, max(sc.last, min(len(gids), 1<<10)))
	} else {
		sc.p.reset()
	}
	if *keys == nil {
		*keys = make([]int64, 0, 2*sc.last)
	}
	var pa, pb int64
	prevG := int32(-1)
	for i, a := range cols[0][:len(gids)] {
		if keep != nil && !keep[i] {
			gids[i] = -1
			continue
		}
		b := cols[1][i]
		if prevG >= 0 && a == pa && b == pb {
			gids[i] = prevG
			continue
		}
		g, ok := sc.p.get(a, b)
		if !ok {
			g = int32(len(*keys) / 2)
			sc.p.put(a, b, g)
			*keys = append(*keys, a, b)
		}
		gids[i], pa, pb, prevG = g, a, b, g
	}
	sc.last = len(*keys) / 2
	return true
}

// intColumn is a's values as int64s, as key bytes encode them (see
// key.go), widened into *buf where a's are narrower; false for a column
// not of integers.
func intColumn(a arrow.Array, buf *[]int64) ([]int64, bool) {
	switch a := a.(type) {
	case *array.Int64:
		return a.Int64Values(), true
	case *array.Int8:
		return widenInts(buf, a.Int8Values()), true
	case *array.Int16:
		return widenInts(buf, a.Int16Values()), true
	case *array.Int32:
		return widenInts(buf, a.Int32Values()), true
	case *array.Uint8:
		return widenInts(buf, a.Uint8Values()), true
	case *array.Uint16:
		return widenInts(buf, a.Uint16Values()), true
	case *array.Uint32:
		return widenInts(buf, a.Uint32Values()), true
	case *array.Uint64:
		return widenInts(buf, a.Uint64Values()), true
	case *array.Date32:
		return widenInts(buf, a.Date32Values()), true
	case *array.Date64:
		return widenInts(buf, a.Date64Values()), true
	case *array.Timestamp:
		return widenInts(buf, a.TimestampValues()), true
	case *array.Time32:
		return widenInts(buf, a.Time32Values()), true
	case *array.Time64:
		return widenInts(buf, a.Time64Values()), true
	case *array.Duration:
		return widenInts(buf, a.DurationValues()), true
	}
	return nil, false
}

func widenInts[T intLike](buf *[]int64, v []T) []int64 {
	out := grow(*buf, len(v))[:len(v)]
	for i, x := range v {
		out[i] = int64(x)
	}
	*buf = out
	return out
}

// intKeyBytes appends the key bytes of a key of the integers xs (see
// key.go): for each, a 1, then its 8 bytes.
func intKeyBytes(dst []byte, xs ...int64) []byte {
	for _, x := range xs {
		dst = binary.LittleEndian.AppendUint64(append(dst, 1), uint64(x))
	}
	return dst
}

// intKeyStrings are the key bytes of the integer keys ints, width
// integers a key (1 or 2).
func intKeyStrings(ints []int64, width int) []string {
	out := make([]string, len(ints)/width)
	var arena keyArena
	var kb [18]byte
	for i := range out {
		out[i] = arena.str(intKeyBytes(kb[:0], ints[i*width:(i+1)*width]...))
	}
	return out
}
