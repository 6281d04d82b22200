package ipccheck

import (
	"errors"
	"fmt"

	flatbuffers "github.com/google/flatbuffers/go"
)

// Metadata walks a message's metadata flatbuffer far enough to see that
// every vector and string in it lies inside it, and that the record
// batch lengths and buffers it gives fit the message's body. arrow-go
// sizes allocations by those lengths before it reads anything else (in
// Go a failed allocation is not an error but the end of the process) and
// slices the body by them, so a corrupt message must be refused first.
//
// The slots are those of Arrow's Message.fbs and Schema.fbs.
func Metadata(meta []byte) error { return metadata(meta, -1) }

// Message is Metadata for a message whose body has already arrived, as
// in a Flight stream: its body must also be as long as the metadata says.
func Message(meta []byte, body int64) error { return metadata(meta, body) }

func metadata(meta []byte, body int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("arrow/ipc: invalid message metadata: %v", r)
		}
	}()
	if len(meta) < 4 {
		return errors.New("arrow/ipc: invalid message metadata: too short")
	}
	w := &walk{buf: meta, budget: len(meta)}
	msg := w.table(flatbuffers.GetUOffsetT(meta))
	w.body = msg.GetInt64Slot(10, 0) // bodyLength
	if body >= 0 && w.body > body {
		return fmt.Errorf("arrow/ipc: invalid metadata: a body of %d bytes where %d arrived", w.body, body)
	}
	w.keyValues(msg, 4)
	switch msg.GetUint8Slot(6, 0) { // header_type
	case 1: // Schema
		if s, ok := w.child(msg, 2); ok {
			w.fields(s, 1, 0)
			w.keyValues(s, 2)
			w.vector(s, 3, 8) // features
		}
	case 2: // DictionaryBatch
		if d, ok := w.child(msg, 2); ok {
			if rb, ok := w.child(d, 1); ok {
				w.recordBatch(rb)
			}
		}
	case 3: // RecordBatch
		if rb, ok := w.child(msg, 2); ok {
			w.recordBatch(rb)
		}
	}
	return w.err
}

// walk checks a flatbuffer's vectors against its bounds. budget bounds
// the tables visited, since offsets may point anywhere, also backwards.
type walk struct {
	buf    []byte
	body   int64 // the message's body length
	budget int
	err    error
}

func (w *walk) fail(format string, a ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("arrow/ipc: invalid metadata: "+format, a...)
	}
}

const maxFieldDepth = 64

func (w *walk) table(pos flatbuffers.UOffsetT) flatbuffers.Table {
	if w.budget--; w.budget < 0 {
		panic("too many tables")
	}
	if int(pos) >= len(w.buf) {
		panic("table outside the metadata")
	}
	return flatbuffers.Table{Bytes: w.buf, Pos: pos}
}

// slot is the offset of field i of t, or 0 when it is absent.
func slot(t flatbuffers.Table, i int) flatbuffers.UOffsetT {
	return flatbuffers.UOffsetT(t.Offset(flatbuffers.VOffsetT(4 + 2*i)))
}

func (w *walk) child(t flatbuffers.Table, i int) (flatbuffers.Table, bool) {
	o := slot(t, i)
	if o == 0 {
		return flatbuffers.Table{}, false
	}
	return w.table(t.Indirect(o + t.Pos)), true
}

// vector checks field i of t, a vector of elements of size bytes, and
// returns where its elements start and how many there are.
func (w *walk) vector(t flatbuffers.Table, i int, size int) (flatbuffers.UOffsetT, int) {
	o := slot(t, i)
	if o == 0 {
		return 0, 0
	}
	start, n := t.Vector(o), t.VectorLen(o)
	if n < 0 || int64(start)+int64(n)*int64(size) > int64(len(w.buf)) {
		w.fail("a vector of %d elements at %d runs past its %d bytes", n, start, len(w.buf))
		return 0, 0
	}
	return start, n
}

func (w *walk) tables(t flatbuffers.Table, i int, each func(flatbuffers.Table)) {
	start, n := w.vector(t, i, 4)
	for k := range n {
		if w.err != nil {
			return
		}
		at := start + flatbuffers.UOffsetT(4*k)
		each(w.table(at + flatbuffers.GetUOffsetT(w.buf[at:])))
	}
}

func (w *walk) keyValues(t flatbuffers.Table, i int) {
	w.tables(t, i, func(kv flatbuffers.Table) {
		w.vector(kv, 0, 1)
		w.vector(kv, 1, 1)
	})
}

func (w *walk) fields(t flatbuffers.Table, i int, depth int) {
	if depth > maxFieldDepth {
		panic("fields nested too deep")
	}
	w.tables(t, i, func(f flatbuffers.Table) {
		w.vector(f, 0, 1) // name
		if typ, ok := w.child(f, 3); ok {
			switch f.GetUint8Slot(8, 0) { // type_type
			case 10: // Timestamp: its time zone
				w.vector(typ, 1, 1)
			case 14: // Union: its type ids
				w.vector(typ, 1, 4)
			}
		}
		w.child(f, 4) // dictionary encoding: scalars only
		w.fields(f, 5, depth+1)
		w.keyValues(f, 6)
	})
}

// recordBatch checks the lengths and buffers arrow-go builds arrays from:
// it slices the body by them before it can fail cleanly, and arrays made
// before such a failure are never released.
func (w *walk) recordBatch(rb flatbuffers.Table) {
	if n := rb.GetInt64Slot(4, 0); n < 0 {
		w.fail("%d rows", n)
	}
	start, n := w.vector(rb, 1, 16) // field nodes: length, null count
	for k := range n {
		at := start + flatbuffers.UOffsetT(16*k)
		length, nulls := rb.GetInt64(at), rb.GetInt64(at+8)
		if length < 0 || nulls < 0 || nulls > length {
			w.fail("a column of %d values with %d nulls", length, nulls)
		}
	}
	start, n = w.vector(rb, 2, 16) // buffers: offset, length in the body
	for k := range n {
		at := start + flatbuffers.UOffsetT(16*k)
		off, length := rb.GetInt64(at), rb.GetInt64(at+8)
		if off < 0 || length < 0 || off > w.body || length > w.body-off {
			w.fail("a buffer of %d bytes at %d of a %d-byte body", length, off, w.body)
		}
	}
	w.child(rb, 3)                // compression: scalars only
	start, n = w.vector(rb, 4, 8) // variadic buffer counts
	for k := range n {
		if c := rb.GetInt64(start + flatbuffers.UOffsetT(8*k)); c < 0 || c > int64(len(w.buf)) {
			w.fail("%d variadic buffers", c)
		}
	}
}
