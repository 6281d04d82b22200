package exec

import (
	"context"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// FromBatches is a source over batches in memory, all of schema s. Run
// retains them while it reads them; the caller keeps its references.
func FromBatches(s *arrow.Schema, recs ...arrow.RecordBatch) SourceStage {
	return &batchesStage{schema: s, recs: recs}
}

type batchesStage struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

func (s *batchesStage) Name() string { return "batches" }

func (s *batchesStage) open(ctx context.Context, e *env) (Source, error) {
	return &batchesSource{schema: s.schema, recs: s.recs}, nil
}

type batchesSource struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	i      int
}

func (s *batchesSource) Schema() *arrow.Schema { return s.schema }

func (s *batchesSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.i >= len(s.recs) {
		return nil, io.EOF
	}
	rec := s.recs[s.i]
	s.i++
	rec.Retain()
	return rec, nil
}

func (s *batchesSource) Close() error { return nil }

// Collect is a sink that calls fn with every batch in order; fn borrows
// the batch (retain it to keep it). schema, when not nil, is called once
// with the stream's schema first.
func Collect(schema func(*arrow.Schema), fn func(arrow.RecordBatch) error) Stage {
	return &collectStage{schema: schema, fn: fn}
}

type collectStage struct {
	schema func(*arrow.Schema)
	fn     func(arrow.RecordBatch) error
	// reads, when not nil, are the only columns fn reads.
	reads []string
}

func (s *collectStage) readsColumns([]string) []string { return s.reads }

func (s *collectStage) Name() string { return "collect" }
func (s *collectStage) isSink()      {}

func (s *collectStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	if s.schema != nil {
		s.schema(in)
	}
	return &bound{name: "collect", newOp: func(operator) (operator, error) { return s, nil }}, nil
}

func (s *collectStage) push(ctx context.Context, rec arrow.RecordBatch) error { return s.fn(rec) }
func (s *collectStage) finish(context.Context) error                          { return nil }
func (s *collectStage) release()                                              {}
