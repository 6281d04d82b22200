package exec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// PositionKey is the custom metadata key of a record batch message that
// gives the batch's place in dataset order, in an Arrow IPC stream
// written in arrival order (sluice scan --order arrival -o -). Its value
// is a JSON object:
//
//	{"group":5,"batch":0,"last":true,"file":3,"row_group":1}
//
// Any Arrow reader reads such a stream; a sluice stage that depends on
// order restores dataset order from these positions first, and one that
// does not (select, filter...) passes each batch's position on. A stream
// whose batches carry no position is in dataset order as it stands.
const PositionKey = "sluice.position"

// Position is a batch's place in dataset order.
type Position struct {
	// Group is the unit that orders the stream (a row group read),
	// numbered 0, 1, 2... in dataset order with no gaps.
	Group int64
	// Batch numbers the batches of a group in order, from 0; numbers may
	// be skipped (a batch a filter emptied), never repeated.
	Batch int64
	// Last marks a group's final batch; every group has one, possibly
	// with zero rows.
	Last bool
	// File and RowGroup say where the group came from, for messages.
	File, RowGroup int
}

func (p Position) String() string {
	return fmt.Sprintf("group %d batch %d (file %d row group %d)", p.Group, p.Batch, p.File, p.RowGroup)
}

// before reports whether p comes before q in dataset order.
func (p Position) before(q Position) bool {
	return p.Group < q.Group || p.Group == q.Group && p.Batch < q.Batch
}

// positionJSON is Position on the wire; pointers tell a field left out
// from a zero.
type positionJSON struct {
	Group    *int64 `json:"group"`
	Batch    *int64 `json:"batch"`
	Last     bool   `json:"last,omitempty"`
	File     int    `json:"file"`
	RowGroup int    `json:"row_group"`
}

// maxPositionLen bounds a position's text: what sluice writes is under
// a hundred bytes, so more is not a position.
const maxPositionLen = 1 << 10

func (p Position) marshal() string {
	b, _ := json.Marshal(positionJSON{Group: &p.Group, Batch: &p.Batch, Last: p.Last, File: p.File, RowGroup: p.RowGroup})
	return string(b)
}

// ParsePosition reads the value of a batch's PositionKey.
func ParsePosition(s string) (Position, error) {
	if len(s) > maxPositionLen {
		return Position{}, fmt.Errorf("batch position: %d bytes, more than %d", len(s), maxPositionLen)
	}
	var j positionJSON
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	if err := d.Decode(&j); err != nil {
		return Position{}, fmt.Errorf("batch position %q: %w", s, err)
	}
	if d.More() {
		return Position{}, fmt.Errorf("batch position %q: more after the object", s)
	}
	switch {
	case j.Group == nil || j.Batch == nil:
		return Position{}, fmt.Errorf("batch position %q: want group and batch", s)
	case *j.Group < 0 || *j.Batch < 0 || j.File < 0 || j.RowGroup < 0:
		return Position{}, fmt.Errorf("batch position %q: a negative number", s)
	}
	return Position{Group: *j.Group, Batch: *j.Batch, Last: j.Last, File: j.File, RowGroup: j.RowGroup}, nil
}

// WithPosition returns rec (a new reference) carrying pos in its custom
// metadata, which an Arrow IPC writer puts in the batch's message.
func WithPosition(rec arrow.RecordBatch, pos Position) arrow.RecordBatch {
	meta := arrow.NewMetadata([]string{PositionKey}, []string{pos.marshal()})
	return array.NewRecordBatchWithMetadata(rec.Schema(), rec.Columns(), rec.NumRows(), meta)
}

// PositionOf returns the position rec carries: ok false when it carries
// none, an error when what it carries is not a position.
func PositionOf(rec arrow.RecordBatch) (pos Position, ok bool, err error) {
	rm, isMeta := rec.(arrow.RecordBatchWithMetadata)
	if !isMeta {
		return Position{}, false, nil
	}
	meta := rm.Metadata()
	i := meta.FindKey(PositionKey)
	if i < 0 {
		return Position{}, false, nil
	}
	pos, err = ParsePosition(meta.Values()[i])
	return pos, err == nil, err
}

// plain returns rec without custom metadata (a new reference), so that a
// position read from the input is not written out with a batch that is
// no longer in arrival order.
func plain(rec arrow.RecordBatch) arrow.RecordBatch {
	if rm, ok := rec.(arrow.RecordBatchWithMetadata); ok && rm.Metadata().Len() > 0 {
		return array.NewRecordBatch(rec.Schema(), rec.Columns(), rec.NumRows())
	}
	rec.Retain()
	return rec
}
