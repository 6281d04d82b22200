package scan

import (
	"math/bits"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/mempool"
)

// rowRun is a run of rows that a filter keeps: rows [start, start+n).
type rowRun struct{ start, n int }

// keptRuns appends to runs the runs of rows where keep is true and
// valid (nil: every row valid), and says how many rows they hold. The
// rows are packed 64 to a word first, without a branch a row, and the
// runs found from one change to the next (TrailingZeros): a filter that
// keeps rows here and there (TPC-H Q21's l_receiptdate > l_commitdate,
// two in three) mispredicted a branch at every run's ends, row by row.
func keptRuns(keep, valid []bool, runs []rowRun) ([]rowRun, int) {
	n := len(keep)
	kept := 0
	in, start := false, 0
	for base := 0; base < n; base += 64 {
		m := min(64, n-base)
		k := keep[base : base+m]
		var w uint64
		if valid == nil {
			for i := range k {
				w |= uint64(*(*uint8)(unsafe.Pointer(&k[i]))) << i
			}
		} else {
			v := valid[base : base+m]
			for i := range k {
				w |= uint64(*(*uint8)(unsafe.Pointer(&k[i]))&*(*uint8)(unsafe.Pointer(&v[i]))) << i
			}
		}
		kept += bits.OnesCount64(w)
		for pos := 0; pos < m; {
			if in {
				// The run goes on to the next zero (bits past m are zero).
				ones := bits.TrailingZeros64(^(w >> pos))
				if pos+ones >= m {
					break // on into the next word
				}
				runs = append(runs, rowRun{start, base + pos + ones - start})
				in = false
				pos += ones
				continue
			}
			rest := w >> pos
			if rest == 0 {
				break
			}
			pos += bits.TrailingZeros64(rest)
			in, start = true, base+pos
		}
	}
	if in {
		runs = append(runs, rowRun{start, n - start})
	}
	return runs, kept
}

// takeRuns is the rows of a in runs (kept rows in all), copied a run at a
// time: a filter that keeps most rows keeps them in long runs, and a
// string column's bytes then move in a few large copies where arrow's
// filter kernel appends value by value (a tenth of TPC-H Q1's time).
// It reports false for a type it does not take (booleans, dictionaries,
// nested and large types) and for values of fixed width other than 4 and
// 8 bytes in short runs, which compute's filter then does.
func takeRuns(mem memory.Allocator, a arrow.Array, runs []rowRun, kept int) (arrow.Array, bool) {
	if kept == 0 {
		return nil, false
	}
	d := a.Data()
	off := d.Offset()
	bufs := d.Buffers()
	var out []*memory.Buffer
	switch a.(type) {
	case *array.String, *array.Binary:
		offsets := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(bufs[1].Bytes()))), off+d.Len()+1)[off:]
		total := 0
		for _, r := range runs {
			total += int(offsets[r.start+r.n] - offsets[r.start])
		}
		ob := mempool.DirtyBuffer(mem, 4*(kept+1))
		vb := mempool.DirtyBuffer(mem, total)
		oo := unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(ob.Bytes()))), kept+1)
		var values []byte
		if len(bufs) > 2 && bufs[2] != nil {
			values = bufs[2].Bytes()
		}
		vo, at, start := vb.Bytes(), 0, int32(0)
		for _, r := range runs {
			base, end := offsets[r.start], offsets[r.start+r.n]
			for i, o := range offsets[r.start : r.start+r.n] {
				oo[at+i] = start + o - base
			}
			copy(vo[start:], values[base:end])
			start += end - base
			at += r.n
		}
		oo[kept] = start
		out = []*memory.Buffer{nil, ob, vb}
	default:
		fw, ok := a.DataType().(arrow.FixedWidthDataType)
		if !ok || a.DataType().ID() == arrow.BOOL || a.DataType().ID() == arrow.DICTIONARY || fw.BitWidth()%8 != 0 || len(bufs) != 2 {
			return nil, false
		}
		w := fw.BitWidth() / 8
		short := kept < 8*len(runs)
		if short && w != 4 && w != 8 {
			// Runs of a few values: a copy call each costs more than
			// arrow's kernel, which walks the mask a word at a time.
			return nil, false
		}
		values := bufs[1].Bytes()[off*w:]
		vb := mempool.DirtyBuffer(mem, w*kept)
		vo := vb.Bytes()
		switch {
		case short && w == 4:
			// Value by value, a run at a time: cheaper than a copy call
			// a run, and than arrow's kernel with the mask it needs.
			takeShort(unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(values))), len(values)/4),
				unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(vo))), kept), runs)
		case short:
			takeShort(unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(values))), len(values)/8),
				unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(vo))), kept), runs)
		default:
			for _, r := range runs {
				vo = vo[copy(vo, values[r.start*w:(r.start+r.n)*w]):]
			}
		}
		out = []*memory.Buffer{nil, vb}
	}
	nulls := 0
	if a.NullN() > 0 {
		vb := memory.NewResizableBuffer(mem)
		vb.Resize(int(bitutil.BytesForBits(int64(kept))))
		src, at := bufs[0].Bytes(), 0
		for _, r := range runs {
			bitutil.CopyBitmap(src, off+r.start, r.n, vb.Bytes(), at)
			at += r.n
		}
		nulls = kept - bitutil.CountSetBits(vb.Bytes(), 0, kept)
		out[0] = vb
	}
	data := array.NewData(a.DataType(), kept, out, nil, nulls, 0)
	for _, b := range out {
		if b != nil {
			b.Release()
		}
	}
	defer data.Release()
	return array.MakeFromData(data), true
}

// takeShort copies the values of runs, one after another, to out.
func takeShort[T uint32 | uint64](values, out []T, runs []rowRun) {
	at := 0
	for _, r := range runs {
		for _, v := range values[r.start : r.start+r.n] {
			out[at] = v
			at++
		}
	}
}
