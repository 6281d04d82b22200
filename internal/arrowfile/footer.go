package arrowfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	flatbuffers "github.com/google/flatbuffers/go"
)

// The end of an Arrow IPC file: the Footer flatbuffer, its length as an
// int32 and the magic "ARROW1".
const (
	magicLen = 6
	// footerRecordBatches is the vtable slot of Footer.recordBatches
	// (field 3: version, schema, dictionaries, recordBatches).
	footerRecordBatches = 4 + 2*3
	// blockSize is the size of a Block struct in a vector: offset int64,
	// metaDataLength int32 (padded to 8), bodyLength int64.
	blockSize = 24
)

// permuteFooter reorders, in place, the record batch blocks of the
// footer at the end of tail (which ends an IPC file): entry i becomes the
// block written order[i]-th. The blocks are fixed-size structs stored
// inline in the flatbuffer, so moving them changes no offset.
func permuteFooter(tail []byte, order []int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed footer: %v", r)
		}
	}()
	n := len(tail)
	if n < magicLen+4 || string(tail[n-magicLen:]) != "ARROW1" {
		return errors.New("no Arrow magic at the end")
	}
	flen := int(int32(binary.LittleEndian.Uint32(tail[n-magicLen-4:])))
	start := n - magicLen - 4 - flen
	if flen <= 0 || start < 0 {
		return fmt.Errorf("footer length %d out of range", flen)
	}
	buf := tail[start : n-magicLen-4]
	t := &flatbuffers.Table{Bytes: buf, Pos: flatbuffers.GetUOffsetT(buf)}
	o := flatbuffers.UOffsetT(t.Offset(footerRecordBatches))
	count := 0
	var vec flatbuffers.UOffsetT
	if o != 0 {
		count = t.VectorLen(o)
		vec = t.Vector(o)
	}
	if count != len(order) {
		return fmt.Errorf("footer lists %d record batches, %d were written", count, len(order))
	}
	if count == 0 {
		return nil
	}
	end := int(vec) + count*blockSize
	if end > len(buf) {
		return errors.New("record batch blocks past the end of the footer")
	}
	blocks := slices.Clone(buf[vec:end])
	for i, j := range order {
		copy(buf[int(vec)+i*blockSize:], blocks[j*blockSize:(j+1)*blockSize])
	}
	return nil
}
