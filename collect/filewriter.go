package collect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

// FileWriter writes an Arrow IPC file whose batches are stored in the
// order they are written (arrival order) and listed in its footer in Pos
// order, so that any Arrow reader (which reads the batches the footer
// lists, in its order) sees dataset order. Nothing is held back: each
// batch goes to w as it is written; only the footer, some 24 bytes a
// batch, waits for Close.
//
// A FileWriter is used from one goroutine. A file is complete only after
// Close returns nil: on an error, abort whatever w writes to (a
// store.Writer's Abort) so nothing complete-looking is left.
type FileWriter struct {
	w      *tailWriter
	fw     *ipc.FileWriter
	pos    []Pos
	closed bool
	err    error
}

// NewFileWriter starts an IPC file of schema on w. mem allocates what
// encoding needs (nil: memory.DefaultAllocator).
func NewFileWriter(w io.Writer, schema *arrow.Schema, mem memory.Allocator) (*FileWriter, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	tw := &tailWriter{w: w}
	fw, err := ipc.NewFileWriter(tw, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	return &FileWriter{w: tw, fw: fw}, nil
}

// Write appends a batch; pos is where it belongs in dataset order. The
// writer does not keep rec.
func (f *FileWriter) Write(rec arrow.RecordBatch, pos Pos) error {
	if f.err != nil {
		return f.err
	}
	if f.closed {
		return errors.New("collect: write to a closed FileWriter")
	}
	if err := f.fw.Write(rec); err != nil {
		f.err = err
		return err
	}
	f.pos = append(f.pos, pos)
	return nil
}

// Batches is the number of batches written so far.
func (f *FileWriter) Batches() int { return len(f.pos) }

// Close writes the footer, listing the batches in Pos order (batches at
// the same position keep the order they were written in). It does not
// close the underlying writer.
func (f *FileWriter) Close() error {
	if f.closed {
		return f.err
	}
	f.closed = true
	if f.err != nil {
		return f.err
	}
	// Everything ipc.FileWriter writes from here on (the end-of-stream
	// marker, the footer, its length and the magic) is held back, so the
	// footer's block list can be put in dataset order before it is written.
	f.w.hold = true
	if err := f.fw.Close(); err != nil {
		f.err = err
		return err
	}
	order := make([]int, len(f.pos))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return f.pos[a].Compare(f.pos[b]) })
	tail := f.w.held.Bytes()
	if err := permuteFooter(tail, order); err != nil {
		f.err = fmt.Errorf("collect: IPC file footer: %w", err)
		return f.err
	}
	if _, err := f.w.w.Write(tail); err != nil {
		f.err = err
		return err
	}
	return nil
}

// tailWriter passes writes through until hold is set, then keeps them.
type tailWriter struct {
	w    io.Writer
	hold bool
	held bytes.Buffer
}

func (t *tailWriter) Write(p []byte) (int, error) {
	if t.hold {
		return t.held.Write(p)
	}
	return t.w.Write(p)
}

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
