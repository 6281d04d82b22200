package exec

import (
	"context"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// A side too large for the join's memory is spilled, and the join would
// partition its left side too and join part by part. When that left side
// ends within cutHold instead (TPC-H Q12's 30 thousand lineitems against
// 1.5 million orders, under the 256 MiB a worker has), the spilled side is
// read back through the left side's keys: what is left of it is the rows
// of those keys, held in memory if they fit, in the side's order, and the
// join runs as one whose side fit.

// cutSpilled is cutSide for a side that spilled in parts (not a semi or
// anti join's, which builds on its small left side instead: joinflip.go).
// A cut that does not fit the side's reservation is dropped: the side
// stays spilled.
func cutSpilled(ctx context.Context, e *env, side *sideBatches, o JoinOptions, held []arrow.RecordBatch, schema *arrow.Schema) error {
	filter, release, err := keysFilter(held, schema, o)
	if err != nil {
		return err
	}
	defer release()
	src := &spillSource{f: side.spill, schema: side.schema}
	for _, p := range side.parts {
		src.spans = append(src.spans, p...)
	}
	var kept []arrow.RecordBatch
	fits := true
	// Each row carries its place in the side (rposColumn): the kept rows
	// are put back in that order.
	stages := []Stage{filter, Sort([]SortKey{{Column: rposColumn}}), Drop(rposColumn), Collect(nil, func(rec arrow.RecordBatch) error {
		if !fits || rec.NumRows() == 0 {
			return nil
		}
		if side.res != nil && !side.res.grow(sideCost(rec, side.keys)) {
			fits = false
			return errEnough // the rest is not read
		}
		rec.Retain()
		kept = append(kept, rec)
		return nil
	})}
	err = Run(ctx, Pipeline{Source: src, Stages: stages}, Options{Mem: e.mem, Workers: e.workers, Memory: e.memory, TempDir: e.tempDir, Open: e.open})
	if err != nil || !fits {
		releaseAll(kept)
		if side.res != nil {
			side.res.free() // what the spilled side held: nothing
		}
		return err
	}
	if sideCut != nil {
		var after int64
		for _, b := range kept {
			after += b.NumRows()
		}
		sideCut(side.rows, after)
	}
	side.spill.close()
	side.spill, side.parts, side.schema = nil, nil, nil
	side.batches = kept
	if side.res != nil {
		side.res.pin()
	}
	return nil
}

// spillSource reads batches of a spill file back, span by span.
type spillSource struct {
	f      *spillFile
	spans  []spillSpan
	schema *arrow.Schema
	i      int
}

func (s *spillSource) Name() string                               { return "spill" }
func (s *spillSource) open(context.Context, *env) (Source, error) { return s, nil }
func (s *spillSource) Schema() *arrow.Schema                      { return s.schema }
func (s *spillSource) Close() error                               { return nil }

func (s *spillSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.i >= len(s.spans) {
		return nil, io.EOF
	}
	sp := s.spans[s.i]
	s.i++
	return s.f.read(sp.off, sp.n, s.schema)
}
