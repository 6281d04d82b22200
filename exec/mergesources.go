package exec

import (
	"context"
	"fmt"
)

// MergeSources is Merge over sources instead of objects: each source is
// already sorted by keys, and rows that tie come from the earlier source
// first. names name the sources in errors (an input out of order). Package
// fanout merges its reducers' sorted outputs, read as it chooses, this way.
func MergeSources(keys []SortKey, names []string, srcs ...SourceStage) SourceStage {
	return &mergeSourcesStage{keys: keys, names: names, srcs: srcs}
}

type mergeSourcesStage struct {
	keys  []SortKey
	names []string
	srcs  []SourceStage
}

func (s *mergeSourcesStage) Name() string { return "merge" }

func (s *mergeSourcesStage) open(ctx context.Context, e *env) (Source, error) {
	if len(s.srcs) == 0 || len(s.names) != len(s.srcs) {
		return nil, invalidf("merge: %d sources and %d names", len(s.srcs), len(s.names))
	}
	var ins []mergeInput
	fail := func(err error) (Source, error) {
		for _, in := range ins {
			in.src.Close()
		}
		return nil, err
	}
	for i, src := range s.srcs {
		o, err := src.open(ctx, e)
		if err != nil {
			return fail(fmt.Errorf("merge: %s: %w", s.names[i], err))
		}
		ins = append(ins, mergeInput{name: s.names[i], src: o})
	}
	schema := ins[0].src.Schema()
	if err := checkSameSchema(schema, ins[0].name, ins[1:]); err != nil {
		return fail(err)
	}
	ob, err := newOrderBy("merge", schema, s.keys)
	if err != nil {
		return fail(err)
	}
	return newMergeSource(ctx, e, schema, ob, ins), nil
}
