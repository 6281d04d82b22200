package exec

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/expr"
)

// Key bytes: the encoding of a row's key columns that hash aggregation
// groups by and partition hashes (with xxh3). It is part of the contract
// of partition, so it never changes. For each key column, in the order
// given:
//
//	null                          one byte 0
//	integers, dates, times,       one byte 1, then the value as a signed
//	timestamps, durations         64-bit little-endian integer (unsigned
//	                              64-bit values: their bit pattern); the
//	                              value as stored, in the column's unit
//	floats                        one byte 1, then the float64 IEEE-754 bits
//	                              little-endian, -0 as +0 and every NaN as
//	                              0x7ff8000000000001
//	booleans                      one byte 1, then one byte 0 or 1
//	strings, binaries             one byte 1, then the length as a 32-bit
//	                              little-endian integer, then the bytes
//
// A dictionary-encoded column is encoded as its values. Integers of
// every width encode alike, so a key hashes the same whether it is an
// int32 or an int64.

// keyArena makes the key strings of the groups a batch finds out of a
// few large buffers, not an allocation each: they then lie one after
// another, as an aggregation's fold reads them, where strings from all
// over the heap cost a cache miss each (a sixth of TPC-H Q20's time, its
// 900 k groups). A string keeps its buffer alive, the other keys' bytes
// with it; a batch's keys are few buffers' worth.
type keyArena struct{ buf []byte }

func (a *keyArena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(a.buf)-len(a.buf) {
		a.buf = make([]byte, 0, max(4<<10, 2*cap(a.buf), len(b)))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[start], len(b))
}

// unsafeString is b as a string without a copy, for a lookup that
// keeps neither.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// keyCol encodes and decodes one key column.
type keyCol struct {
	idx  int
	name string
	in   arrow.DataType
	out  arrow.DataType // the type of the group column (a dictionary's value type)
	// size adds each row's encoded size to sizes.
	size func(a arrow.Array, sizes []int)
	// enc writes each row's bytes at pos[i] and advances pos[i].
	enc func(a arrow.Array, buf []byte, pos []int)
}

type keyEncoder struct {
	cols []keyCol
}

func newKeyEncoder(stage string, in *arrow.Schema, names []string) (*keyEncoder, error) {
	if len(names) == 0 {
		return nil, invalidf("%s: no key columns given", stage)
	}
	k := &keyEncoder{}
	for _, name := range names {
		i, err := colIndex(stage, in, name)
		if err != nil {
			return nil, err
		}
		dt := in.Field(i).Type
		kc, ok := keyColFor(dt)
		if !ok {
			return nil, invalidf("%s: key column %q has type %s, which cannot be a key", stage, name, dt)
		}
		kc.idx, kc.name = i, name
		k.cols = append(k.cols, kc)
	}
	return k, nil
}

func fixedSize(w int) func(a arrow.Array, sizes []int) {
	return func(a arrow.Array, sizes []int) {
		if a.NullN() == 0 {
			for i := range sizes {
				sizes[i] += w
			}
			return
		}
		for i := range sizes {
			if a.IsNull(i) {
				sizes[i]++
			} else {
				sizes[i] += w
			}
		}
	}
}

type intLike interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func encInts[T intLike](vals func(arrow.Array) []T) func(a arrow.Array, buf []byte, pos []int) {
	return func(a arrow.Array, buf []byte, pos []int) {
		v := vals(a)
		nulls := a.NullN() > 0
		for i := range pos {
			p := pos[i]
			if nulls && a.IsNull(i) {
				buf[p] = 0
				pos[i] = p + 1
				continue
			}
			buf[p] = 1
			binary.LittleEndian.PutUint64(buf[p+1:p+9], uint64(int64(v[i])))
			pos[i] = p + 9
		}
	}
}

// encFixed encodes a column whose values take width bytes each: a flag
// byte (0 for null), then the bytes put writes for the row.
func encFixed(width int, put func(a arrow.Array) func(i int, dst []byte)) func(a arrow.Array, buf []byte, pos []int) {
	return func(a arrow.Array, buf []byte, pos []int) {
		row := put(a)
		for i := range pos {
			p := pos[i]
			if a.IsNull(i) {
				buf[p] = 0
				pos[i] = p + 1
				continue
			}
			buf[p] = 1
			row(i, buf[p+1:p+1+width])
			pos[i] = p + 1 + width
		}
	}
}

func canonicalFloat(f float64) uint64 {
	switch {
	case f == 0:
		return 0
	case f != f:
		return 0x7ff8000000000001
	}
	return math.Float64bits(f)
}

func encFloats[T float32 | float64](vals func(arrow.Array) []T) func(a arrow.Array, buf []byte, pos []int) {
	return func(a arrow.Array, buf []byte, pos []int) {
		v := vals(a)
		nulls := a.NullN() > 0
		for i := range pos {
			p := pos[i]
			if nulls && a.IsNull(i) {
				buf[p] = 0
				pos[i] = p + 1
				continue
			}
			buf[p] = 1
			binary.LittleEndian.PutUint64(buf[p+1:p+9], canonicalFloat(float64(v[i])))
			pos[i] = p + 9
		}
	}
}

func keyColFor(dt arrow.DataType) (keyCol, bool) {
	kc := keyCol{in: dt, out: dt, size: fixedSize(9)}
	switch dt.(type) {
	case *arrow.Int8Type:
		kc.enc = encInts(func(a arrow.Array) []int8 { return a.(*array.Int8).Int8Values() })
	case *arrow.Int16Type:
		kc.enc = encInts(func(a arrow.Array) []int16 { return a.(*array.Int16).Int16Values() })
	case *arrow.Int32Type:
		kc.enc = encInts(func(a arrow.Array) []int32 { return a.(*array.Int32).Int32Values() })
	case *arrow.Int64Type:
		kc.enc = encInts(func(a arrow.Array) []int64 { return a.(*array.Int64).Int64Values() })
	case *arrow.Uint8Type:
		kc.enc = encInts(func(a arrow.Array) []uint8 { return a.(*array.Uint8).Uint8Values() })
	case *arrow.Uint16Type:
		kc.enc = encInts(func(a arrow.Array) []uint16 { return a.(*array.Uint16).Uint16Values() })
	case *arrow.Uint32Type:
		kc.enc = encInts(func(a arrow.Array) []uint32 { return a.(*array.Uint32).Uint32Values() })
	case *arrow.Uint64Type:
		kc.enc = encInts(func(a arrow.Array) []uint64 { return a.(*array.Uint64).Uint64Values() })
	case *arrow.Date32Type:
		kc.enc = encInts(func(a arrow.Array) []arrow.Date32 { return a.(*array.Date32).Date32Values() })
	case *arrow.Date64Type:
		kc.enc = encInts(func(a arrow.Array) []arrow.Date64 { return a.(*array.Date64).Date64Values() })
	case *arrow.TimestampType:
		kc.enc = encInts(func(a arrow.Array) []arrow.Timestamp { return a.(*array.Timestamp).TimestampValues() })
	case *arrow.Time32Type:
		kc.enc = encInts(func(a arrow.Array) []arrow.Time32 { return a.(*array.Time32).Time32Values() })
	case *arrow.Time64Type:
		kc.enc = encInts(func(a arrow.Array) []arrow.Time64 { return a.(*array.Time64).Time64Values() })
	case *arrow.DurationType:
		kc.enc = encInts(func(a arrow.Array) []arrow.Duration { return a.(*array.Duration).DurationValues() })
	case *arrow.Float32Type:
		kc.enc = encFloats(func(a arrow.Array) []float32 { return a.(*array.Float32).Float32Values() })
	case *arrow.Float64Type:
		kc.enc = encFloats(func(a arrow.Array) []float64 { return a.(*array.Float64).Float64Values() })
	case *arrow.Decimal128Type:
		// The unscaled value: a column's decimals share their scale.
		kc.size = fixedSize(17)
		kc.enc = encFixed(16, func(a arrow.Array) func(int, []byte) {
			v := a.(*array.Decimal128).Values()
			return func(i int, dst []byte) {
				binary.LittleEndian.PutUint64(dst, v[i].LowBits())
				binary.LittleEndian.PutUint64(dst[8:], uint64(v[i].HighBits()))
			}
		})
	case *arrow.BooleanType:
		kc.size = fixedSize(2)
		kc.enc = encFixed(1, func(a arrow.Array) func(int, []byte) {
			b := a.(*array.Boolean)
			return func(i int, dst []byte) {
				dst[0] = 0
				if b.Value(i) {
					dst[0] = 1
				}
			}
		})
	default:
		acc := expr.StringAccessor(dt)
		if acc == nil {
			return kc, false
		}
		if d, ok := dt.(*arrow.DictionaryType); ok {
			kc.out = d.ValueType
		}
		kc.size = func(a arrow.Array, sizes []int) {
			if sa, ok := a.(*array.String); ok && a.NullN() == 0 {
				offs := sa.ValueOffsets()
				for i := range sizes {
					sizes[i] += 5 + int(offs[i+1]-offs[i])
				}
				return
			}
			s := acc(a)
			for i := range sizes {
				if a.IsNull(i) {
					sizes[i]++
				} else {
					sizes[i] += 5 + len(s(i))
				}
			}
		}
		kc.enc = func(a arrow.Array, buf []byte, pos []int) {
			if sa, ok := a.(*array.String); ok && a.NullN() == 0 {
				// ValueBytes starts at the first value's offset; a slice's
				// offsets do not start at zero.
				offs, data := sa.ValueOffsets(), sa.ValueBytes()
				base := offs[0]
				for i := range pos {
					p := pos[i]
					v := data[offs[i]-base : offs[i+1]-base]
					buf[p] = 1
					binary.LittleEndian.PutUint32(buf[p+1:p+5], uint32(len(v)))
					copy(buf[p+5:], v)
					pos[i] = p + 5 + len(v)
				}
				return
			}
			s := acc(a)
			for i := range pos {
				p := pos[i]
				if a.IsNull(i) {
					buf[p] = 0
					pos[i] = p + 1
					continue
				}
				v := s(i)
				buf[p] = 1
				binary.LittleEndian.PutUint32(buf[p+1:p+5], uint32(len(v)))
				copy(buf[p+5:], v)
				pos[i] = p + 5 + len(v)
			}
		}
	}
	return kc, true
}

// keyRows holds the key bytes of a batch's rows: row i is
// buf[offs[i]:offs[i+1]]. Its slices are reused across batches.
type keyRows struct {
	buf  []byte
	offs []int
	pos  []int
}

func (r *keyRows) row(i int) []byte { return r.buf[r.offs[i]:r.offs[i+1]] }

// encode fills r with the key bytes of every row of rec.
func (k *keyEncoder) encode(rec arrow.RecordBatch, r *keyRows) {
	n := int(rec.NumRows())
	r.pos = grow(r.pos, n)
	clear(r.pos)
	for _, c := range k.cols {
		c.size(rec.Column(c.idx), r.pos)
	}
	r.offs = grow(r.offs, n+1)
	total := 0
	for i, s := range r.pos {
		r.offs[i] = total
		r.pos[i] = total
		total += s
	}
	r.offs[n] = total
	r.buf = grow(r.buf, total)
	for _, c := range k.cols {
		c.enc(rec.Column(c.idx), r.buf, r.pos)
	}
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// decode appends the key values in b to one builder per key column.
func (k *keyEncoder) decode(b []byte, builders []array.Builder) error {
	for ci, c := range k.cols {
		if len(b) == 0 {
			return fmt.Errorf("key bytes end early")
		}
		flag := b[0]
		b = b[1:]
		bld := builders[ci]
		if flag == 0 {
			bld.AppendNull()
			continue
		}
		switch c.out.(type) {
		case *arrow.BooleanType:
			bld.(*array.BooleanBuilder).Append(b[0] == 1)
			b = b[1:]
			continue
		case *arrow.Float32Type:
			bld.(*array.Float32Builder).Append(float32(math.Float64frombits(binary.LittleEndian.Uint64(b))))
			b = b[8:]
			continue
		case *arrow.Float64Type:
			bld.(*array.Float64Builder).Append(math.Float64frombits(binary.LittleEndian.Uint64(b)))
			b = b[8:]
			continue
		case *arrow.Decimal128Type:
			if len(b) < 16 {
				return fmt.Errorf("key bytes end early")
			}
			bld.(*array.Decimal128Builder).Append(decimal128.New(int64(binary.LittleEndian.Uint64(b[8:])), binary.LittleEndian.Uint64(b)))
			b = b[16:]
			continue
		}
		if expr.StringAccessor(c.out) != nil {
			n := int(binary.LittleEndian.Uint32(b))
			v := b[4 : 4+n]
			b = b[4+n:]
			switch bb := bld.(type) {
			case *array.StringBuilder:
				bb.BinaryBuilder.Append(v)
			case *array.LargeStringBuilder:
				bb.BinaryBuilder.Append(v)
			case *array.BinaryBuilder:
				bb.Append(v)
			case *array.StringViewBuilder:
				bb.Append(string(v))
			default:
				return fmt.Errorf("no decoder for %s", c.out)
			}
			continue
		}
		x := int64(binary.LittleEndian.Uint64(b))
		b = b[8:]
		if !appendInt(bld, x) {
			return fmt.Errorf("no decoder for %s", c.out)
		}
	}
	return nil
}

// appendInt appends x to b, a builder of an integer type or of one kept
// as an integer (dates, times, timestamps, durations); false for another.
func appendInt(b array.Builder, x int64) bool {
	switch bb := b.(type) {
	case *array.Int8Builder:
		bb.Append(int8(x))
	case *array.Int16Builder:
		bb.Append(int16(x))
	case *array.Int32Builder:
		bb.Append(int32(x))
	case *array.Int64Builder:
		bb.Append(x)
	case *array.Uint8Builder:
		bb.Append(uint8(x))
	case *array.Uint16Builder:
		bb.Append(uint16(x))
	case *array.Uint32Builder:
		bb.Append(uint32(x))
	case *array.Uint64Builder:
		bb.Append(uint64(x))
	case *array.Date32Builder:
		bb.Append(arrow.Date32(x))
	case *array.Date64Builder:
		bb.Append(arrow.Date64(x))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(x))
	case *array.Time32Builder:
		bb.Append(arrow.Time32(x))
	case *array.Time64Builder:
		bb.Append(arrow.Time64(x))
	case *array.DurationBuilder:
		bb.Append(arrow.Duration(x))
	default:
		return false
	}
	return true
}

func (k *keyEncoder) builders(mem memory.Allocator) []array.Builder {
	bs := make([]array.Builder, len(k.cols))
	for i, c := range k.cols {
		bs[i] = array.NewBuilder(mem, c.out)
	}
	return bs
}
