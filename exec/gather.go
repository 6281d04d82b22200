package exec

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/mempool"
)

// rowRef is row Row of batch Batch.
type rowRef struct {
	Batch int32
	Row   int32
}

// gatherRows builds a batch of the rows refs names, taken from srcs (which
// all have schema s).
func gatherRows(ctx context.Context, mem memory.Allocator, s *arrow.Schema, srcs []arrow.RecordBatch, refs []rowRef) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, s.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	arrs := make([]arrow.Array, len(srcs))
	for i := range cols {
		for b, r := range srcs {
			arrs[b] = r.Column(i)
		}
		c, err := gatherColumn(ctx, mem, s.Field(i).Type, arrs, refs)
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	return array.NewRecordBatch(s, cols, int64(len(refs))), nil
}

func gatherColumn(ctx context.Context, mem memory.Allocator, dt arrow.DataType, arrs []arrow.Array, refs []rowRef) (arrow.Array, error) {
	n := len(refs)
	var nulls *memory.Buffer
	nullN := 0
	for _, a := range arrs {
		if a.NullN() > 0 {
			nulls = memory.NewResizableBuffer(mem)
			nulls.Resize(int(bitutil.BytesForBits(int64(n))))
			bm := nulls.Bytes()
			for i, r := range refs {
				if arrs[r.Batch].IsValid(int(r.Row)) {
					bitutil.SetBit(bm, i)
				} else {
					nullN++
				}
			}
			break
		}
	}
	if nulls != nil {
		defer nulls.Release()
	}
	if nullN == 0 {
		// No bitmap without nulls, whichever inputs the rows came from:
		// the same rows gathered from other batches are the same bytes.
		nulls = nil
	}
	if fw, ok := dt.(arrow.FixedWidthDataType); ok && fw.BitWidth()%8 == 0 && dt.ID() != arrow.DICTIONARY {
		w := fw.BitWidth() / 8
		vals := mempool.DirtyBuffer(mem, n*w) // every row is written
		defer vals.Release()
		switch w {
		case 1:
			gatherFixed[uint8](arrs, refs, vals.Bytes())
		case 2:
			gatherFixed[uint16](arrs, refs, vals.Bytes())
		case 4:
			gatherFixed[uint32](arrs, refs, vals.Bytes())
		case 8:
			gatherFixed[uint64](arrs, refs, vals.Bytes())
		default:
			out := vals.Bytes()
			for i, r := range refs {
				a := arrs[r.Batch]
				src := a.Data().Buffers()[1].Bytes()[(a.Data().Offset()+int(r.Row))*w:]
				copy(out[i*w:(i+1)*w], src[:w])
			}
		}
		data := array.NewData(dt, n, []*memory.Buffer{nulls, vals}, nil, nullN, 0)
		defer data.Release()
		return array.MakeFromData(data), nil
	}
	switch dt.ID() {
	case arrow.STRING, arrow.BINARY, arrow.LARGE_STRING, arrow.LARGE_BINARY:
		acc := expr.StringAccessor(dt)
		get := make([]func(int) string, len(arrs))
		total := 0
		for b, a := range arrs {
			get[b] = acc(a)
		}
		for _, r := range refs {
			total += len(get[r.Batch](int(r.Row)))
		}
		bld := array.NewBuilder(mem, dt)
		defer bld.Release()
		bld.Reserve(n)
		switch bb := bld.(type) {
		case *array.StringBuilder:
			bb.ReserveData(total)
		case *array.LargeStringBuilder:
			bb.ReserveData(total)
		case *array.BinaryBuilder:
			bb.ReserveData(total)
		}
		for _, r := range refs {
			a := arrs[r.Batch]
			if a.IsNull(int(r.Row)) {
				bld.AppendNull()
				continue
			}
			v := get[r.Batch](int(r.Row))
			switch bb := bld.(type) {
			case *array.StringBuilder:
				bb.Append(v)
			case *array.LargeStringBuilder:
				bb.Append(v)
			case *array.BinaryBuilder:
				bb.AppendString(v)
			}
		}
		return bld.NewArray(), nil
	case arrow.BOOL:
		bld := array.NewBooleanBuilder(mem)
		defer bld.Release()
		bld.Reserve(n)
		for _, r := range refs {
			a := arrs[r.Batch].(*array.Boolean)
			if a.IsNull(int(r.Row)) {
				bld.AppendNull()
			} else {
				bld.UnsafeAppend(a.Value(int(r.Row)))
			}
		}
		return bld.NewArray(), nil
	}
	// Anything else: put the sources end to end (one needs no copy) and
	// take.
	var all arrow.Array
	if len(arrs) == 1 {
		all = arrs[0]
		all.Retain()
	} else {
		var err error
		if all, err = array.Concatenate(arrs, mem); err != nil {
			return nil, err
		}
	}
	defer all.Release()
	starts := make([]int32, len(arrs))
	off := int32(0)
	for b, a := range arrs {
		starts[b] = off
		off += int32(a.Len())
	}
	ib := array.NewInt32Builder(mem)
	defer ib.Release()
	ib.Reserve(n)
	for _, r := range refs {
		ib.UnsafeAppend(starts[r.Batch] + r.Row)
	}
	idx := ib.NewInt32Array()
	defer idx.Release()
	return takeArray(ctx, mem, all, idx)
}

func gatherFixed[T uint8 | uint16 | uint32 | uint64](arrs []arrow.Array, refs []rowRef, out []byte) {
	srcs := make([][]T, len(arrs))
	for b, a := range arrs {
		d := a.Data()
		if d.Len() == 0 || d.Buffers()[1] == nil {
			continue
		}
		srcs[b] = arrow.GetData[T](d.Buffers()[1].Bytes())[d.Offset() : d.Offset()+d.Len()]
	}
	dst := arrow.GetData[T](out)[:len(refs)]
	for i, r := range refs {
		dst[i] = srcs[r.Batch][r.Row]
	}
}
