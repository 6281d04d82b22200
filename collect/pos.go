package collect

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sluice-data/sluice/internal/arrowsize"
	"github.com/sluice-data/sluice/scan"
)

// Pos is a batch's place in dataset order: its part, then where in the
// dataset it came from.
type Pos struct {
	// Part is the piece of work the batch belongs to, numbered from 0 in
	// dataset order.
	Part int
	scan.Position
}

// Compare orders positions as the dataset does: by part, then file, row
// group and batch.
func (p Pos) Compare(q Pos) int {
	if c := cmp.Compare(p.Part, q.Part); c != 0 {
		return c
	}
	if c := cmp.Compare(p.File, q.File); c != 0 {
		return c
	}
	if c := cmp.Compare(p.RowGroup, q.RowGroup); c != 0 {
		return c
	}
	return cmp.Compare(p.Batch, q.Batch)
}

func (p Pos) String() string {
	return fmt.Sprintf("part %d file %d row group %d batch %d", p.Part, p.File, p.RowGroup, p.Batch)
}

// Batch is a record batch and its place in the dataset. Whoever holds it
// owns one reference and releases it.
type Batch struct {
	arrow.RecordBatch
	Pos Pos
}

// Bytes is the size of the batch's buffers.
func (b Batch) Bytes() int64 { return arrowsize.Record(b.RecordBatch) }

// posJSON is Pos on the wire (Flight app_metadata), with names that do
// not depend on Go's.
type posJSON struct {
	Part     int    `json:"part"`
	File     int    `json:"file"`
	Key      string `json:"key,omitempty"`
	RowGroup int    `json:"row_group"`
	Batch    int    `json:"batch"`
	Row      int64  `json:"row"`
	Last     bool   `json:"last,omitempty"`
}

// MarshalPos encodes a position as the JSON object a DoGet stream carries
// in each batch's app_metadata:
//
//	{"part":0,"file":3,"key":"lineitem/part-00003.parquet","row_group":1,"batch":0,"row":0,"last":true}
func MarshalPos(p Pos) []byte {
	b, _ := json.Marshal(posJSON{p.Part, p.File, p.Key, p.RowGroup, p.Batch, p.Row, p.Last})
	return b
}

// UnmarshalPos decodes what MarshalPos encoded.
func UnmarshalPos(b []byte) (Pos, error) {
	var j posJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return Pos{}, fmt.Errorf("batch position: %w", err)
	}
	return Pos{Part: j.Part, Position: scan.Position{File: j.File, Key: j.Key, RowGroup: j.RowGroup, Batch: j.Batch, Row: j.Row, Last: j.Last}}, nil
}
