package exec

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/zeebo/xxh3"

	"github.com/sluice-data/sluice/format"
	"github.com/sluice-data/sluice/store"
)

// Partition is a sink that splits the stream into n objects by a hash of
// key columns: a row goes to partition xxh3(key bytes) mod n, where
// xxh3 is XXH3-64 with seed 0 and the key bytes are as documented in
// key.go (for a single string key: 0x01, the length as 4 bytes
// little-endian, the bytes). The hash is stable: the same key goes to the
// same partition in every run, release and process.
//
// Partition i is written to out/part-NNNNN.EXT (i in five digits), in
// the format ext names (package format: arrow, arrows, parquet, csv or
// jsonl), with that format's usual suffix. Rows keep their
// input order within a partition. Every partition is written, empty ones
// too, and all appear only when the whole pipeline succeeded.
func Partition(n int, keys []string, out, ext string) Stage {
	return &partitionStage{n: n, keys: keys, out: out, ext: ext}
}

// PartitionOf is the partition of n that key bytes go to.
func PartitionOf(keyBytes []byte, n int) int { return int(xxh3.Hash(keyBytes) % uint64(n)) }

type partitionStage struct {
	n    int
	keys []string
	out  string
	ext  string
}

func (s *partitionStage) Name() string { return "partition" }
func (s *partitionStage) isSink()      {}

func (s *partitionStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	if s.n < 1 || s.n > 100000 {
		return nil, invalidf("partition: the number of partitions must be 1..100000, got %d", s.n)
	}
	name := s.ext
	if name == "" {
		name = "arrow"
	}
	f, err := format.Parse(name)
	if err != nil {
		return nil, invalidf("partition: %v", err)
	}
	if err := f.Check(in); err != nil {
		return nil, invalidf("partition: %v", err)
	}
	ext := f.Suffixes()[0][1:]
	keys, err := newKeyEncoder("partition", in, s.keys)
	if err != nil {
		return nil, err
	}
	return &bound{name: "partition", newOp: func(operator) (operator, error) {
		return &partitionOp{s: s, ext: ext, e: e, mem: e.mem, schema: in, keys: keys}, nil
	}}, nil
}

type partitionOp struct {
	s      *partitionStage
	ext    string
	e      *env
	mem    memory.Allocator
	schema *arrow.Schema
	keys   *keyEncoder
	outs   []*objectWriter
	st     *store.Store
	prefix string
	rows   keyRows
	part   []int32
}

func (o *partitionOp) start(ctx context.Context) error {
	if o.outs != nil {
		return nil
	}
	st, prefix, err := o.e.open(ctx, o.s.out)
	if err != nil {
		return err
	}
	o.st, o.prefix = st, prefix
	o.outs = make([]*objectWriter, 0, o.s.n)
	for i := range o.s.n {
		key := store.Join(prefix, fmt.Sprintf("part-%05d.%s", i, o.ext))
		w, err := newObjectWriter(ctx, o.e, st, key, o.schema)
		if err != nil {
			return fmt.Errorf("partition: %w", err)
		}
		o.outs = append(o.outs, w)
	}
	return nil
}

func (o *partitionOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	if err := o.start(ctx); err != nil {
		return err
	}
	n := int(rec.NumRows())
	o.keys.encode(rec, &o.rows)
	o.part = grow(o.part, n)
	counts := make([]int, o.s.n)
	for i := range n {
		p := PartitionOf(o.rows.row(i), o.s.n)
		o.part[i] = int32(p)
		counts[p]++
	}
	for p, c := range counts {
		if c == 0 {
			continue
		}
		var out arrow.RecordBatch
		if c == n {
			rec.Retain()
			out = rec
		} else {
			var err error
			out, err = takeRows(ctx, o.mem, rec, func(add func(int32)) {
				for i, q := range o.part[:n] {
					if int(q) == p {
						add(int32(i))
					}
				}
			}, c)
			if err != nil {
				return err
			}
		}
		err := o.outs[p].writeBatch(out)
		out.Release()
		if err != nil {
			return fmt.Errorf("partition: %s: %w", o.st.URL(fmt.Sprintf("part-%05d.%s", p, o.ext)), err)
		}
	}
	return nil
}

func (o *partitionOp) finish(ctx context.Context) error {
	if err := o.start(ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for len(o.outs) > 0 {
		w := o.outs[0]
		o.outs = o.outs[1:]
		if err := w.close(); err != nil {
			return fmt.Errorf("partition: %w", err)
		}
	}
	return nil
}

func (o *partitionOp) release() {
	for _, w := range o.outs {
		w.abort()
	}
	o.outs = nil
}
