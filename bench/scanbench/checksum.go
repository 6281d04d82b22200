package scanbench

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/zeebo/xxh3"

	"github.com/sluice-data/sluice/scan"
)

// Checksum is a per-column checksum of a scan's values that does not
// depend on the order batches arrive in: each batch's column hash is
// mixed with the batch's position and the results are added. Two scans of
// the same dataset with the same batch size agree exactly when they
// delivered the same values at the same places.
type Checksum struct {
	Rows int64
	Cols map[string]uint64
}

// Add folds one batch in.
func (c *Checksum) Add(b scan.Batch) {
	if c.Cols == nil {
		c.Cols = map[string]uint64{}
	}
	c.Rows += b.NumRows()
	var key [24]byte
	binary.LittleEndian.PutUint64(key[0:], uint64(b.Pos.File))
	binary.LittleEndian.PutUint64(key[8:], uint64(b.Pos.RowGroup))
	binary.LittleEndian.PutUint64(key[16:], uint64(b.Pos.Batch))
	for i, f := range b.Schema().Fields() {
		h := xxh3.New()
		h.Write(key[:])
		hashArray(h, b.Column(i))
		c.Cols[f.Name] += h.Sum64()
	}
}

// Equal reports whether two checksums agree on the rows and every column.
func (c Checksum) Equal(o Checksum) bool {
	return c.Rows == o.Rows && maps.Equal(c.Cols, o.Cols)
}

// String prints the rows and one short hash over all columns, in name order.
func (c Checksum) String() string {
	h := xxh3.New()
	for _, n := range slices.Sorted(maps.Keys(c.Cols)) {
		fmt.Fprintf(h, "%s=%x;", n, c.Cols[n])
	}
	return fmt.Sprintf("%d rows, %d columns, %016x", c.Rows, len(c.Cols), h.Sum64())
}

// Diff names the columns whose checksums differ.
func (c Checksum) Diff(o Checksum) string {
	var out []string
	if c.Rows != o.Rows {
		out = append(out, fmt.Sprintf("rows %d != %d", c.Rows, o.Rows))
	}
	for _, n := range slices.Sorted(maps.Keys(c.Cols)) {
		if c.Cols[n] != o.Cols[n] {
			out = append(out, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(o.Cols)) {
		if _, ok := c.Cols[n]; !ok {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// hashArray writes an array's logical values to h: the bytes of a
// fixed-width or binary array's values as one slice (fast), anything else
// value by value; validity row by row when there are nulls.
func hashArray(h *xxh3.Hasher, a arrow.Array) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(a.Len()))
	h.Write(n[:])
	if a.NullN() > 0 {
		bits := make([]byte, (a.Len()+7)/8)
		for i := 0; i < a.Len(); i++ {
			if a.IsNull(i) {
				bits[i/8] |= 1 << (i % 8)
			}
		}
		h.Write(bits)
	}
	switch v := a.(type) {
	case *array.String:
		hashOffsets(h, v.ValueOffsets(), v.ValueBytes())
	case *array.Binary:
		hashOffsets(h, v.ValueOffsets(), v.ValueBytes())
	case *array.Boolean:
		bits := make([]byte, (v.Len()+7)/8)
		for i := 0; i < v.Len(); i++ {
			if v.Value(i) {
				bits[i/8] |= 1 << (i % 8)
			}
		}
		h.Write(bits)
	default:
		if fw, ok := a.DataType().(arrow.FixedWidthDataType); ok && fw.BitWidth()%8 == 0 && len(a.Data().Buffers()) == 2 {
			w := fw.BitWidth() / 8
			if buf := a.Data().Buffers()[1]; buf != nil {
				off := a.Data().Offset()
				h.Write(buf.Bytes()[off*w : (off+a.Len())*w])
			}
			return
		}
		for i := 0; i < a.Len(); i++ {
			h.WriteString(a.ValueStr(i))
			h.Write([]byte{0})
		}
	}
}

// hashOffsets hashes the lengths and the bytes of a binary array's values
// (data is already cut to them); lengths, not offsets, so a slice hashes
// like a copy.
func hashOffsets(h *xxh3.Hasher, offs []int32, data []byte) {
	if len(offs) == 0 {
		return
	}
	lens := make([]byte, 4*(len(offs)-1))
	for i := 1; i < len(offs); i++ {
		binary.LittleEndian.PutUint32(lens[4*(i-1):], uint32(offs[i]-offs[i-1]))
	}
	h.Write(lens)
	h.Write(data)
}
