package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The hooks in this file let package fanout cut a pipeline at its
// exchanges and run the pieces on many workers with the results of one
// process: which stages are per-batch, a shuffle stage, a splitter with
// Partition's hash, and sources that read several streams in turn.

// stageKind is how a stage consumes its input, which decides where a
// distributed plan may cut the pipeline.
type stageKind int

const (
	// PerBatch stages map each batch on its own (select, drop, rename,
	// filter, shuffle): any set of batches may go to any worker.
	kindPerBatch stageKind = iota + 1
	// Aggregate stages (sum-by, count-by, agg-by) summarize each batch
	// and fold the summaries in stream order; see splitAgg.
	kindAggregate
	// Ordered stages need the whole stream in order (sort, top, head,
	// merge).
	kindOrdered
	// Sink stages end the pipeline.
	kindSink
)

// kinds binds each stage to the schema before it, as Run would, and
// says what kind each is. Errors are those Run gives for the same
// stages (ErrInvalid for mistakes in how the pipeline is written); the
// last stage need not be a sink. Binding has no effects, except that a
// Collect's schema function is called.
func kinds(in *arrow.Schema, stages []Stage, opts Options) ([]stageKind, error) {
	e := newEnv(opts)
	kinds := make([]stageKind, len(stages))
	schema := in
	for i, st := range stages {
		if schema == nil {
			return nil, invalidf("%s: writes no stream, so it must be the last stage", stages[i-1].Name())
		}
		if ps, ok := st.(*programStage); ok {
			// A program's output is known when it writes it, unless
			// --schema says it; what follows is bound then.
			kinds[i] = kindOrdered
			if schema = ps.o.Schema; schema == nil {
				for j := i + 1; j < len(stages); j++ {
					kinds[j] = kindOrdered
				}
				return kinds, nil
			}
			continue
		}
		pl, err := st.bind(e, schema)
		if err != nil {
			return nil, err
		}
		switch {
		case pl.out == nil:
			kinds[i] = kindSink
		case pl.mapper != nil:
			kinds[i] = kindPerBatch
		case pl.agg != nil:
			kinds[i] = kindAggregate
			pl.agg.release()
		default:
			kinds[i] = kindOrdered
		}
		schema = pl.out
	}
	return kinds, nil
}

// Shuffle is an exchange: in package fanout, the rows before it are
// hash-partitioned by the key columns into parts reducers, and each
// reducer runs the stages after it over its part. In one process
// nothing needs moving and it hands each batch on as it is.
func Shuffle(keys []string, parts int) Stage { return &shuffleStage{keys: keys, parts: parts} }

type shuffleStage struct {
	keys  []string
	parts int
}

func (s *shuffleStage) Name() string { return "shuffle" }

func (s *shuffleStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	if s.parts < 1 || s.parts > 100000 {
		return nil, invalidf("shuffle: the number of parts (--to) must be 1..100000, got %d", s.parts)
	}
	if _, err := newKeyEncoder("shuffle", in, s.keys); err != nil {
		return nil, err
	}
	return &bound{name: "shuffle", out: in, mapper: passThrough{}}, nil
}

type passThrough struct{}

func (passThrough) mapBatch(_ context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error) {
	in.Retain()
	return in, nil
}

// Splitter cuts batches into parts by a hash of key columns: a row goes
// to PartitionOf(its key bytes, n), as Partition sends it, and rows keep
// their order within a part.
type Splitter struct {
	mem  memory.Allocator
	keys *keyEncoder
	n    int
	rows keyRows
	part []int32
}

// NewSplitter binds a splitter to the schema of the batches it will cut.
func NewSplitter(schema *arrow.Schema, keys []string, n int, mem memory.Allocator) (*Splitter, error) {
	if n < 1 {
		return nil, invalidf("shuffle: the number of parts must be at least 1, got %d", n)
	}
	k, err := newKeyEncoder("shuffle", schema, keys)
	if err != nil {
		return nil, err
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	return &Splitter{mem: mem, keys: k, n: n}, nil
}

// Split returns n batches, the rows of rec that go to each part (nil
// where none do). The caller releases them; rec is borrowed. A Splitter
// is not safe for concurrent use.
func (s *Splitter) Split(ctx context.Context, rec arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	out := make([]arrow.RecordBatch, s.n)
	if n == 0 {
		return out, nil
	}
	s.keys.encode(rec, &s.rows)
	s.part = grow(s.part, n)
	counts := make([]int, s.n)
	for i := range n {
		p := PartitionOf(s.rows.row(i), s.n)
		s.part[i] = int32(p)
		counts[p]++
	}
	for p, c := range counts {
		switch {
		case c == 0:
			continue
		case c == n:
			rec.Retain()
			out[p] = rec
			continue
		}
		b, err := takeRows(ctx, s.mem, rec, func(add func(int32)) {
			for i, q := range s.part[:n] {
				if int(q) == p {
					add(int32(i))
				}
			}
		}, c)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out[p] = b
	}
	return out, nil
}

// Concat is a source that reads each source in turn, opening each when
// the one before it ends; all must have the same schema. Package fanout
// reads the committed outputs of many tasks, in dataset order, this way.
func Concat(sources ...SourceStage) SourceStage { return &concatStage{srcs: sources} }

type concatStage struct{ srcs []SourceStage }

func (c *concatStage) Name() string { return "concat" }

func (c *concatStage) open(ctx context.Context, e *env) (Source, error) {
	if len(c.srcs) == 0 {
		return nil, invalidf("concat: no sources")
	}
	first, err := c.srcs[0].open(ctx, e)
	if err != nil {
		return nil, err
	}
	schema := first.Schema()
	parts := make([]func() (Source, error), 0, len(c.srcs)-1)
	for i, s := range c.srcs[1:] {
		parts = append(parts, func() (Source, error) {
			src, err := s.open(ctx, e)
			if err != nil {
				return nil, err
			}
			if !src.Schema().Equal(schema) {
				src.Close()
				return nil, fmt.Errorf("concat: input %d has schema %s, unlike the first (%s)", i+2, schemaString(src.Schema()), schemaString(schema))
			}
			return src, nil
		})
	}
	return &concatSources{schema: schema, cur: first, parts: parts}, nil
}

// Reopen is a source made anew by make each time it is opened, so that a
// source that reads its stream once (ReadIPC) can be opened for its
// schema and then again for its batches, as a join's other side is.
func Reopen(make func() (SourceStage, error)) SourceStage { return &reopenStage{make: make} }

type reopenStage struct {
	make func() (SourceStage, error)
}

func (r *reopenStage) Name() string { return "reopen" }

func (r *reopenStage) open(ctx context.Context, e *env) (Source, error) {
	s, err := r.make()
	if err != nil {
		return nil, err
	}
	return s.open(ctx, e)
}
