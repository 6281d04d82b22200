package exec

import (
	"encoding/binary"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// intGroupRows is groupRows for a batch grouped by one integer-like key
// column (integers, dates, times, timestamps, durations) with no nulls, as
// sum-by pickup_date is: a row's group is looked up by its value, and key
// bytes are made only for each new group, instead of encoding every row's
// key and hashing the bytes. The groups, their key bytes and the order
// they are first seen in are those groupRows gives. It reports false,
// having done nothing, when the batch does not qualify.
func intGroupRows(k *keyEncoder, rec arrow.RecordBatch, keep []bool, gids []int32, keys *[]string) bool {
	if len(k.cols) != 1 {
		return false
	}
	col := rec.Column(k.cols[0].idx)
	if col.NullN() > 0 || col.Len() != len(gids) {
		return false
	}
	switch a := col.(type) {
	case *array.Int8:
		groupInts(a.Int8Values(), keep, gids, keys)
	case *array.Int16:
		groupInts(a.Int16Values(), keep, gids, keys)
	case *array.Int32:
		groupInts(a.Int32Values(), keep, gids, keys)
	case *array.Int64:
		groupInts(a.Int64Values(), keep, gids, keys)
	case *array.Uint8:
		groupInts(a.Uint8Values(), keep, gids, keys)
	case *array.Uint16:
		groupInts(a.Uint16Values(), keep, gids, keys)
	case *array.Uint32:
		groupInts(a.Uint32Values(), keep, gids, keys)
	case *array.Uint64:
		groupInts(a.Uint64Values(), keep, gids, keys)
	case *array.Date32:
		groupInts(a.Date32Values(), keep, gids, keys)
	case *array.Date64:
		groupInts(a.Date64Values(), keep, gids, keys)
	case *array.Timestamp:
		groupInts(a.TimestampValues(), keep, gids, keys)
	case *array.Time32:
		groupInts(a.Time32Values(), keep, gids, keys)
	case *array.Time64:
		groupInts(a.Time64Values(), keep, gids, keys)
	case *array.Duration:
		groupInts(a.DurationValues(), keep, gids, keys)
	default:
		return false
	}
	return true
}

func groupInts[T intLike](vals []T, keep []bool, gids []int32, keys *[]string) {
	vals = vals[:len(gids)]
	index := map[int64]int32{}
	var prev int64
	prevG := int32(-1)
	var key [9]byte // the key bytes of an integer: 1, then the value (see key.go)
	key[0] = 1
	var arena keyArena
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
		g, ok := index[x]
		if !ok {
			g = int32(len(*keys))
			index[x] = g
			binary.LittleEndian.PutUint64(key[1:], uint64(x))
			*keys = append(*keys, arena.str(key[:]))
		}
		gids[i], prev, prevG = g, x, g
	}
}
