// Package arrowsize measures the memory behind Arrow record batches.
// (arrow/util.TotalRecordSize does the same but pulls protobuf reflection
// into every binary that imports it.)
package arrowsize

import "github.com/apache/arrow-go/v18/arrow"

// Record is the length of every buffer behind a batch: its columns, their
// children and their dictionaries.
func Record(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += Data(c.Data())
	}
	return n
}

// Data is the length of every buffer behind an array's data.
func Data(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += Data(c)
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		n += Data(d.Dictionary())
	}
	return n
}
