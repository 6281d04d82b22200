package exec

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/sluice-data/sluice/store"
)

// Merge merges inputs that are each already sorted by keys into one
// sorted stream; rows that tie come from the earlier input first. As the
// first stage of a pipeline its inputs are the objects the URLs name
// (.arrow, .arrows, .parquet or .csv, a prefix meaning every object under
// it, in key order, each a sorted input). After other stages, the stream
// so far is the first input and the URLs follow. An input found out of
// order is an error naming it.
func Merge(keys []SortKey, urls []string) *MergeStage { return &MergeStage{keys: keys, urls: urls} }

// MergeStage is both a source (merge first) and a stage (merge after
// others).
type MergeStage struct {
	keys []SortKey
	urls []string
}

func (s *MergeStage) Name() string { return "merge" }

// mergeInput is one sorted input being opened.
type mergeInput struct {
	name string
	src  Source
}

func (s *MergeStage) openInputs(ctx context.Context, e *env) ([]mergeInput, error) {
	var ins []mergeInput
	fail := func(err error) ([]mergeInput, error) {
		for _, in := range ins {
			in.src.Close()
		}
		return nil, err
	}
	for _, u := range s.urls {
		st, r, err := store.ResolveURL(ctx, e.open, u)
		if st == nil {
			return fail(err)
		}
		if err != nil {
			return fail(fmt.Errorf("merge: %w", err))
		}
		if len(r.List) == 0 {
			return fail(fmt.Errorf("merge: nothing at %s", u))
		}
		for _, o := range r.List {
			src, err := openObject(ctx, e, st, o.Key)
			if err != nil {
				return fail(fmt.Errorf("merge: %w", err))
			}
			ins = append(ins, mergeInput{name: st.URL(o.Key), src: src})
		}
	}
	return ins, nil
}

func checkSameSchema(first *arrow.Schema, firstName string, ins []mergeInput) error {
	for _, in := range ins {
		if !first.Equal(in.src.Schema()) {
			return invalidf("merge: %s has schema %s, unlike %s (%s)", in.name, schemaString(in.src.Schema()), firstName, schemaString(first))
		}
	}
	return nil
}

// open makes merge the source of a pipeline.
func (s *MergeStage) open(ctx context.Context, e *env) (Source, error) {
	if len(s.urls) == 0 {
		return nil, invalidf("merge: no inputs: name the sorted objects to merge")
	}
	ins, err := s.openInputs(ctx, e)
	if err != nil {
		return nil, err
	}
	schema := ins[0].src.Schema()
	if err := checkSameSchema(schema, ins[0].name, ins[1:]); err != nil {
		for _, in := range ins {
			in.src.Close()
		}
		return nil, err
	}
	ob, err := newOrderBy("merge", schema, s.keys)
	if err != nil {
		for _, in := range ins {
			in.src.Close()
		}
		return nil, err
	}
	return newMergeSource(ctx, e, schema, ob, ins), nil
}

// mergeSource runs the merge on a goroutine of its own and hands its
// batches on through a channel, so merge can be pulled like any source.
type mergeSource struct {
	schema *arrow.Schema
	ch     chan arrow.RecordBatch
	done   chan struct{}
	cancel context.CancelFunc
	err    error
}

func newMergeSource(ctx context.Context, e *env, schema *arrow.Schema, ob *orderBy, ins []mergeInput) *mergeSource {
	ctx, cancel := context.WithCancel(ctx)
	m := &mergeSource{schema: schema, ch: make(chan arrow.RecordBatch, 1), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(m.done)
		defer close(m.ch)
		m.err = runMerge(ctx, e, schema, ob, ins, &chanOp{ctx: ctx, ch: m.ch})
	}()
	return m
}

func (m *mergeSource) Schema() *arrow.Schema { return m.schema }

func (m *mergeSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case rec, ok := <-m.ch:
		if ok {
			return rec, nil
		}
		<-m.done
		if m.err != nil {
			return nil, m.err
		}
		return nil, io.EOF
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (m *mergeSource) Close() error {
	m.cancel()
	for rec := range m.ch {
		rec.Release()
	}
	<-m.done
	return nil
}

// chanOp sends batches into a channel.
type chanOp struct {
	ctx context.Context
	ch  chan<- arrow.RecordBatch
}

func (o *chanOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	rec.Retain()
	select {
	case o.ch <- rec:
		return nil
	case <-o.ctx.Done():
		rec.Release()
		return context.Cause(o.ctx)
	}
}
func (o *chanOp) finish(context.Context) error { return nil }
func (o *chanOp) release()                     {}

// runMerge merges the inputs into next and closes them.
func runMerge(ctx context.Context, e *env, schema *arrow.Schema, ob *orderBy, ins []mergeInput, next operator) error {
	runs := make([]*runReader, len(ins))
	for i, in := range ins {
		runs[i] = &runReader{idx: i, src: &sortedCheck{Source: in.src, name: in.name, ob: ob}, at: -1}
	}
	defer func() {
		for _, r := range runs {
			r.close()
		}
	}()
	return mergeSorted(ctx, e.mem, schema, ob, runs, next)
}

// sortedCheck fails when its source is not in order.
type sortedCheck struct {
	Source
	name string
	ob   *orderBy
	prev arrow.RecordBatch
	keys []vec
	rows int64
}

func (c *sortedCheck) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := c.Source.Next(ctx)
	if err != nil {
		return nil, err
	}
	kv := c.ob.keys(rec)
	n := int(rec.NumRows())
	for i := range n {
		var bad bool
		switch {
		case i > 0:
			bad = c.ob.compare(kv, i-1, kv, i) > 0
		case c.prev != nil:
			bad = c.ob.compare(c.keys, int(c.prev.NumRows())-1, kv, 0) > 0
		}
		if bad {
			rec.Release()
			return nil, fmt.Errorf("merge: %s is not sorted by %v: row %d comes before the one ahead of it", c.name, c.ob.names, c.rows+int64(i)+1)
		}
	}
	if n > 0 {
		if c.prev != nil {
			c.prev.Release()
		}
		rec.Retain()
		c.prev, c.keys = rec, kv
		c.rows += int64(n)
	}
	return rec, nil
}

func (c *sortedCheck) Close() error {
	if c.prev != nil {
		c.prev.Release()
		c.prev = nil
	}
	return c.Source.Close()
}

// bind makes merge a stage after others: the stream so far is input 0.
func (s *MergeStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	ob, err := newOrderBy("merge", in, s.keys)
	if err != nil {
		return nil, err
	}
	return &bound{name: "merge", out: in, newOp: func(next operator) (operator, error) {
		return &mergeOp{s: s, e: e, schema: in, ob: ob, next: next}, nil
	}}, nil
}

// mergeOp feeds the stream so far to a merge running on its own
// goroutine, which pushes the merged rows on to next.
type mergeOp struct {
	s      *MergeStage
	e      *env
	schema *arrow.Schema
	ob     *orderBy
	next   operator

	started bool
	in      chan arrow.RecordBatch
	done    chan struct{}
	cancel  context.CancelFunc
	err     error
}

func (o *mergeOp) start(ctx context.Context) error {
	if o.started {
		return nil
	}
	o.started = true
	ins, err := o.s.openInputs(ctx, o.e)
	if err != nil {
		return err
	}
	if err := checkSameSchema(o.schema, "the stream before merge", ins); err != nil {
		for _, in := range ins {
			in.src.Close()
		}
		return err
	}
	o.in = make(chan arrow.RecordBatch)
	o.done = make(chan struct{})
	mctx, cancel := context.WithCancel(ctx)
	o.cancel = cancel
	all := append([]mergeInput{{name: "the stream before merge", src: &chanSource{schema: o.schema, ch: o.in}}}, ins...)
	go func() {
		defer close(o.done)
		err := runMerge(mctx, o.e, o.schema, o.ob, all, o.next)
		if err == nil {
			err = o.next.finish(mctx)
		}
		o.err = err
		if err != nil {
			cancel()
		}
	}()
	return nil
}

func (o *mergeOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	if err := o.start(ctx); err != nil {
		return err
	}
	rec.Retain()
	select {
	case o.in <- rec:
		return nil
	case <-o.done:
		rec.Release()
		if o.err != nil {
			return o.err
		}
		return errors.New("merge: ended early")
	}
}

func (o *mergeOp) finish(ctx context.Context) error {
	if err := o.start(ctx); err != nil {
		return err
	}
	close(o.in)
	o.in = nil
	<-o.done
	return o.err
}

func (o *mergeOp) release() {
	if !o.started || o.done == nil {
		return
	}
	o.cancel()
	if o.in != nil {
		close(o.in)
		o.in = nil
	}
	<-o.done
}

// chanSource reads batches from a channel until it is closed.
type chanSource struct {
	schema *arrow.Schema
	ch     <-chan arrow.RecordBatch
}

func (s *chanSource) Schema() *arrow.Schema { return s.schema }
func (s *chanSource) Next(ctx context.Context) (arrow.RecordBatch, error) {
	select {
	case rec, ok := <-s.ch:
		if !ok {
			return nil, io.EOF
		}
		return rec, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (s *chanSource) Close() error {
	// Release what the feeding side still hands over until it stops.
	go func(ch <-chan arrow.RecordBatch) {
		for rec := range ch {
			rec.Release()
		}
	}(s.ch)
	return nil
}
