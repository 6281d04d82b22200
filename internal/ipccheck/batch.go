package ipccheck

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Batch checks what arrow-go's IPC reader leaves unchecked and readers
// of the values index by: validity bitmaps and fixed-width values long enough
// for the rows, string and list offsets inside their data, dictionary
// indices inside their dictionary. A batch from outside that fails
// would otherwise panic wherever the bad value is first read.
func Batch(rec arrow.RecordBatch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid batch: %v", r)
		}
	}()
	for i, c := range rec.Columns() {
		if int64(c.Len()) != rec.NumRows() {
			return fmt.Errorf("column %q has %d values in a batch of %d rows", rec.ColumnName(i), c.Len(), rec.NumRows())
		}
		if err := validArray(c); err != nil {
			return fmt.Errorf("column %q: %w", rec.ColumnName(i), err)
		}
	}
	return nil
}

func validArray(a arrow.Array) error {
	d := a.Data()
	end := int64(d.Offset() + d.Len())
	bufs := d.Buffers()
	if len(bufs) > 0 && bufs[0] != nil && int64(bufs[0].Len())*8 < end {
		return fmt.Errorf("validity bitmap of %d bytes for %d values", bufs[0].Len(), end)
	}
	switch a := a.(type) {
	case *array.Dictionary:
		if err := validFixed(d, a.Indices().DataType().(arrow.FixedWidthDataType)); err != nil {
			return err
		}
		dict := a.Dictionary()
		if err := validArray(dict); err != nil {
			return fmt.Errorf("dictionary: %w", err)
		}
		return validIndices(a.Indices(), dict.Len())
	case *array.String:
		return validOffsets(a.ValueOffsets(), d)
	case *array.Binary:
		return validOffsets(a.ValueOffsets(), d)
	case *array.LargeString:
		return validOffsets(a.ValueOffsets(), d)
	case *array.LargeBinary:
		return validOffsets(a.ValueOffsets(), d)
	// Before the ValidateFull case, which *array.Struct also has and
	// which would take it (staticcheck SA4020): a struct's fields are
	// checked here as columns are, each by its own case.
	case *array.Struct:
		for k := range a.NumField() {
			f := a.Field(k)
			if f.Len() < a.Len() {
				return fmt.Errorf("struct field %d has %d values for %d", k, f.Len(), a.Len())
			}
			if err := validArray(f); err != nil {
				return err
			}
		}
		return nil
	case interface{ ValidateFull() error }: // lists, views
		if err := a.ValidateFull(); err != nil {
			return err
		}
	}
	if fw, ok := a.DataType().(arrow.FixedWidthDataType); ok {
		return validFixed(d, fw)
	}
	if l, ok := a.(array.ListLike); ok {
		return validArray(l.ListValues())
	}
	return nil
}

// validFixed checks a fixed-width array's values buffer covers its rows.
func validFixed(d arrow.ArrayData, fw arrow.FixedWidthDataType) error {
	end := int64(d.Offset() + d.Len())
	if end == 0 || fw.BitWidth() == 0 {
		return nil
	}
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil || int64(bufs[1].Len())*8 < end*int64(fw.BitWidth()) {
		return fmt.Errorf("values buffer too short for %d values", end)
	}
	return nil
}

// validIndices checks every valid index is in [0, n).
func validIndices(idx arrow.Array, n int) error {
	switch x := idx.(type) {
	case *array.Int8:
		return indicesIn(x, x.Int8Values(), n)
	case *array.Int16:
		return indicesIn(x, x.Int16Values(), n)
	case *array.Int32:
		return indicesIn(x, x.Int32Values(), n)
	case *array.Int64:
		return indicesIn(x, x.Int64Values(), n)
	case *array.Uint8:
		return indicesIn(x, x.Uint8Values(), n)
	case *array.Uint16:
		return indicesIn(x, x.Uint16Values(), n)
	case *array.Uint32:
		return indicesIn(x, x.Uint32Values(), n)
	case *array.Uint64:
		return indicesIn(x, x.Uint64Values(), n)
	}
	return fmt.Errorf("dictionary indices of type %s", idx.DataType())
}

func indicesIn[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](a arrow.Array, vals []T, n int) error {
	// The largest index, unsigned (a negative one is larger than any
	// dictionary), without branches and four at a time (four chains of
	// comparisons, not one): where it is in range, as nearly always, no
	// index needs a look of its own.
	var h0, h1, h2, h3 uint64
	i := 0
	for ; i+4 <= len(vals); i += 4 {
		v := vals[i : i+4 : i+4]
		h0 = max(h0, uint64(int64(v[0])))
		h1 = max(h1, uint64(int64(v[1])))
		h2 = max(h2, uint64(int64(v[2])))
		h3 = max(h3, uint64(int64(v[3])))
	}
	for _, k := range vals[i:] {
		h0 = max(h0, uint64(int64(k)))
	}
	if max(h0, h1, h2, h3) < uint64(n) {
		return nil
	}
	nulls := a.NullN() > 0
	for i, k := range vals {
		if (int64(k) < 0 || uint64(k) >= uint64(n)) && (!nulls || a.IsValid(i)) {
			return fmt.Errorf("dictionary index %d of a dictionary of %d", int64(k), n)
		}
	}
	return nil
}

// validOffsets checks a string or binary array's offsets rise and stay
// inside its data. (arrow-go's ValidateFull also checks every string is
// UTF-8, which costs more than reading the values and is no risk: Go
// strings may hold any bytes.)
func validOffsets[T int32 | int64](offs []T, d arrow.ArrayData) error {
	if len(offs) == 0 {
		return nil
	}
	var size int64
	if bufs := d.Buffers(); len(bufs) > 2 && bufs[2] != nil {
		size = int64(bufs[2].Len())
	}
	prev := offs[0]
	if prev < 0 {
		return fmt.Errorf("negative offset %d", prev)
	}
	for _, o := range offs[1:] {
		if o < prev {
			return fmt.Errorf("offsets fall from %d to %d", prev, o)
		}
		prev = o
	}
	if int64(prev) > size {
		return fmt.Errorf("offsets reach %d in %d bytes of data", prev, size)
	}
	return nil
}
