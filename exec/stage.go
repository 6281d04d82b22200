package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/store"
)

// ErrInvalid is wrapped by every error that comes from how a pipeline is
// written rather than from running it: a malformed expression, a missing
// column, a wrong type, a sink that is not last.
var ErrInvalid = plan.ErrInvalid

// ErrTooLarge is wrapped by the error of a stage whose input it cannot
// hold within its memory however it splits it (a join's hot key): a
// deterministic failure, which running it again does not mend.
var ErrTooLarge = errors.New("too large for the memory given")

type tooLarge struct{ error }

func (e tooLarge) Is(target error) bool { return target == ErrTooLarge }

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, a ...any) error {
	return &invalidError{fmt.Sprintf(format, a...)}
}

// errEnough is returned up the chain by an operator that wants no more
// input (head, once it has its rows). It is not a failure.
var errEnough = errors.New("exec: enough input")

// Options configure a run. The zero value is usable.
type Options struct {
	// Mem allocates every batch the pipeline makes; nil means
	// memory.DefaultAllocator.
	Mem memory.Allocator
	// Workers is how many batches the leading per-batch stages (select,
	// filter, the partial side of an aggregation) work on at once; zero
	// means GOMAXPROCS.
	Workers int
	// Memory is how many bytes the run's sorts (of batches), joins (of
	// their right sides), aggregations (of their groups), shared parts and
	// order restoring hold together before they spill to disk, the Runs
	// it starts for joins' sides, shared parts and lets included (their
	// own Options.Memory is not used); zero means 256 MiB. Batches in
	// flight between stages and scans' buffers are not counted in it.
	Memory int64
	// TempDir is where they spill; empty means os.TempDir().
	TempDir string
	// Open opens the store a URL names, for sources and sinks that take
	// URLs; nil means store.Open with zero Options but for mem:// buckets
	// that the run's stages share and that end with the run.
	Open store.Opener
	// HandOff lets a ReadIPC source and a WriteIPC sink on a pipe whose
	// other end is a sluice stage that allows it too pass batches
	// through shared memory instead of the pipe (Linux only; see
	// internal/pipeio for the protocol and whom it trusts). Off, every
	// pipe carries the plain Arrow IPC stream, and nothing listens or
	// maps memory.
	HandOff bool
	// HandedOff, when set, is called when a ReadIPC source's input goes
	// on through shared memory.
	HandedOff func()
}

// env is what stages see of the Options while they bind and run.
type env struct {
	mem     memory.Allocator
	workers int
	memory  int64
	tempDir string
	open    store.Opener
	// handOff and handedOff are Options.HandOff and HandedOff.
	handOff   bool
	handedOff func()
	// budget is memory shared by every consumer that spills, in this
	// Run and the Runs it starts (budget.go).
	budget *memBudget
}

func newEnv(o Options) *env {
	e := &env{mem: o.Mem, workers: o.Workers, memory: o.Memory, tempDir: o.TempDir, open: o.Open, handOff: o.HandOff, handedOff: o.HandedOff}
	if e.mem == nil {
		e.mem = memory.DefaultAllocator
	}
	if e.workers <= 0 {
		e.workers = runtime.GOMAXPROCS(0)
	}
	if e.memory <= 0 {
		e.memory = 256 << 20
	}
	e.budget = newMemBudget(e.memory)
	if e.tempDir == "" {
		e.tempDir = os.TempDir()
	}
	if e.open == nil {
		buckets := store.NewMemBuckets()
		e.open = func(ctx context.Context, url string) (*store.Store, string, error) {
			return store.Open(ctx, url, store.Options{MemBuckets: buckets})
		}
	}
	return e
}

// Source produces the batches of a pipeline in stream order.
type Source interface {
	// Schema is the schema of every batch.
	Schema() *arrow.Schema
	// Next returns the next batch, which the caller owns and releases, or
	// io.EOF after the last one.
	Next(ctx context.Context) (arrow.RecordBatch, error)
	// Close releases what the source holds; it is safe after an error
	// and before the end.
	Close() error
}

// SourceStage is the first stage of a pipeline, as written.
type SourceStage interface {
	Name() string
	open(ctx context.Context, e *env) (Source, error)
}

// Stage is one step after the source, as written: its settings, not yet
// bound to an input schema.
type Stage interface {
	Name() string
	bind(e *env, in *arrow.Schema) (*bound, error)
}

// bound is a stage bound to its input schema. Exactly one of mapper, agg
// and newOp is set.
type bound struct {
	name string
	out  *arrow.Schema // nil for a sink
	// mapper transforms each batch on its own; batches may be mapped
	// concurrently.
	mapper mapper
	// agg is a hash aggregation: partials per batch, folded in order.
	agg aggregator
	// newOp makes the operator of a stage that needs its input in order
	// (and, for sinks, next is nil).
	newOp func(next operator) (operator, error)
	// done, when set, releases what the stage holds at the end of a run.
	done func()
}

// mapper transforms one batch into one batch (nil for none). It borrows
// in and returns a batch the caller owns. It is safe for concurrent use.
type mapper interface {
	mapBatch(ctx context.Context, in arrow.RecordBatch) (arrow.RecordBatch, error)
}

// aggregator is a hash aggregation in two halves: partial summarizes one
// batch (concurrently, borrowing it), fold merges partials in stream
// order, and emit sends the result.
type aggregator interface {
	// keep, when not nil, says which rows to aggregate (a filter
	// before the aggregation, evaluated without copying the batch).
	// A nil summary with no error (a batch of no rows) is not folded.
	partial(ctx context.Context, in arrow.RecordBatch, keep []bool) (any, error)
	fold(p any) error
	discard(p any)
	emit(ctx context.Context, next operator) error
	release()
}

// operator takes batches in order. push borrows rec: an operator that
// keeps it retains it. finish is called once after the last push (not
// after an error); release always.
type operator interface {
	push(ctx context.Context, rec arrow.RecordBatch) error
	finish(ctx context.Context) error
	release()
}

// Pipeline is a source followed by stages; the last stage is a sink
// (write, show, to-csv, partition, or WriteIPC).
type Pipeline struct {
	Source SourceStage
	Stages []Stage
}

// String is the pipeline's stage names joined as it would be written.
func (p Pipeline) String() string {
	names := []string{}
	if p.Source != nil {
		names = append(names, p.Source.Name())
	}
	for _, s := range p.Stages {
		names = append(names, s.Name())
	}
	return strings.Join(names, " | ")
}

// IsSink reports whether a stage ends a pipeline (it writes no stream).
func IsSink(s Stage) bool {
	_, ok := s.(sinkStage)
	return ok
}

// sinkStage marks the stages that end a pipeline.
type sinkStage interface{ isSink() }

// colIndex finds a column by name or names the stage, the column and
// what the input has.
func colIndex(stage string, s *arrow.Schema, name string) (int, error) {
	if idx := s.FieldIndices(name); len(idx) > 0 {
		return idx[0], nil
	}
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return 0, &exprError{stage: stage, err: &expr.ColumnError{Column: name, Have: names}}
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		if r != nil {
			r.Release()
		}
	}
}

// schemaString is a schema on one line: name type, ...
func schemaString(s *arrow.Schema) string {
	parts := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		parts[i] = f.Name + " " + f.Type.String()
	}
	return strings.Join(parts, ", ")
}
