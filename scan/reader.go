package scan

import (
	"context"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Reader starts a scan of the dataset as an arrow-go array.RecordReader,
// for code that consumes one (ipc writers, Flight, cdata exports). Its
// batches come in dataset order whatever Options.Ordered says, since a
// RecordReader carries no Position to restore it by. As with every
// RecordReader, a batch is valid until the next call of Next (Retain it
// to keep it); Release stops the scan when the last reference goes.
func (d *Dataset) Reader(ctx context.Context) array.RecordReader {
	r := &reader{schema: d.schema, s: d.scan(ctx, true)}
	r.refs.Store(1)
	return r
}

type reader struct {
	refs   atomic.Int64
	schema *arrow.Schema
	s      *Scanner
	cur    arrow.RecordBatch
}

func (r *reader) Retain() { r.refs.Add(1) }

func (r *reader) Release() {
	if r.refs.Add(-1) == 0 {
		r.drop()
		r.s.Close()
	}
}

func (r *reader) Schema() *arrow.Schema { return r.schema }

func (r *reader) Next() bool {
	r.drop()
	if !r.s.Next() {
		return false
	}
	r.cur = r.s.Batch().RecordBatch
	return true
}

// drop releases the batch Next delivered: the reader owns it, as arrow-go's
// readers own theirs.
func (r *reader) drop() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *reader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch, for code written before arrow-go renamed it.
func (r *reader) Record() arrow.RecordBatch { return r.cur }

func (r *reader) Err() error { return r.s.Err() }
