package exec

import (
	"bufio"
	"container/heap"
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/internal/arrowsize"
	"github.com/sluice-data/sluice/internal/spillfile"
)

// Sort orders the rows by keys; rows that tie keep their input order. It
// holds batches while the run's Options.Memory has room for them; past
// that it sorts what it holds into a run in a temporary file (Arrow IPC,
// under Options.TempDir), and at the end merges the runs. It merges at
// most sortFanIn runs at once: more are merged into fewer, longer runs
// as they come. Temporary files are removed whatever happens.
func Sort(keys []SortKey) Stage { return &sortStage{keys: keys} }

// SortOptions override the run's Options for one sort.
type SortOptions struct {
	Memory  int64  // most bytes held before spilling, within Options.Memory; zero: its share of it
	TempDir string // where runs are spilled; empty means Options.TempDir
}

// SortWith is Sort with its own memory budget and spill directory.
func SortWith(keys []SortKey, opts SortOptions) Stage { return &sortStage{keys: keys, opts: opts} }

type sortStage struct {
	keys []SortKey
	opts SortOptions
}

func (s *sortStage) Name() string { return "sort" }

func (s *sortStage) bind(e *env, in *arrow.Schema) (*bound, error) {
	ob, err := newOrderBy("sort", in, s.keys)
	if err != nil {
		return nil, err
	}
	return &bound{name: "sort", out: in, newOp: func(next operator) (operator, error) {
		op := &sortOp{ob: ob, schema: in, mem: e.mem, next: next, res: e.budget.reserve(s.opts.Memory), tempDir: e.tempDir,
			minRun: max(sortMinRun, e.budget.size/sortMergeFanIn)}
		if s.opts.TempDir != "" {
			op.tempDir = s.opts.TempDir
		}
		return op, nil
	}}, nil
}

// sortMinRun is the least run a sort spills while its share has room
// for it, however full others have made the budget: see sortOp.minRun.
const sortMinRun = 4 << 20

// sortMergeFanIn is the most runs a sort's merge reads at once: each
// holds a file open, and in the merge a read buffer and a batch.
const sortMergeFanIn = 64

// sortFanIn is sortMergeFanIn, but for tests.
var sortFanIn = sortMergeFanIn

type sortOp struct {
	ob      *orderBy
	schema  *arrow.Schema
	mem     memory.Allocator
	next    operator
	res     *reservation // what held costs
	tempDir string
	// minRun is what the sort holds before it spills a run even when the
	// budget is full, if its share has room for it: others may hold
	// past their shares (an aggregation holds its whole result while it
	// sends it here), and a sort that spilled whenever the budget was
	// full would write a run per batch. A sortMergeFanIn-th of the
	// budget, at least sortMinRun: a budget's worth of rows sorted while
	// the budget is full makes about one merge's worth of runs, and the
	// budget is overrun by at most that.
	minRun int64

	held []arrow.RecordBatch
	runs []sortRun // spilled runs in input order
}

// sortRun is a spilled run, written whole and read from the start: its
// file (its only name, see openRun), and its level, how many merges
// made it (0: spilled from memory; l+1: merged from runs of level l).
type sortRun struct {
	f     *os.File
	level int
}

func (o *sortOp) push(ctx context.Context, rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	// Sorting needs, besides the batches, a reference and each key's
	// value for every row: counted too, so the budget bounds them all.
	// When the budget has no room for a batch, and what is held is past
	// minRun or the sort's share, the batches held are sorted into a run
	// and the batch starts the next. A batch the sort cannot hold even
	// then (past its share, or what is pinned leaves it no share) is a
	// run by itself, held only while it is written. No run is smaller
	// than a batch, and none but the last falls short of minRun (or of
	// the sort's share, if less) by more than a batch.
	cost := arrowsize.Record(rec) + rec.NumRows()*int64(8+8*len(o.ob.idx))
	ok := o.res.growFloor(cost, o.minRun)
	if !ok && len(o.held) > 0 {
		if err := o.spill(ctx); err != nil {
			return err
		}
		ok = o.res.growFloor(cost, o.minRun)
	}
	rec.Retain()
	o.held = append(o.held, rec)
	if !ok {
		return o.spill(ctx)
	}
	return nil
}

// sorted calls emit with the held rows in order, outBatchRows at a time.
func (o *sortOp) sorted(ctx context.Context, emit func(arrow.RecordBatch) error) error {
	keys := make([][]vec, len(o.held))
	total := 0
	for b, r := range o.held {
		keys[b] = o.ob.keys(r)
		total += int(r.NumRows())
	}
	refs := make([]rowRef, 0, total)
	for b, r := range o.held {
		for i := range int(r.NumRows()) {
			refs = append(refs, rowRef{int32(b), int32(i)})
		}
	}
	slices.SortStableFunc(refs, func(a, b rowRef) int {
		return o.ob.compare(keys[a.Batch], int(a.Row), keys[b.Batch], int(b.Row))
	})
	for start := 0; start < len(refs); start += outBatchRows {
		out, err := gatherRows(ctx, o.mem, o.schema, o.held, refs[start:min(start+outBatchRows, len(refs))])
		if err != nil {
			return err
		}
		err = emit(out)
		out.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (o *sortOp) dropHeld() {
	releaseAll(o.held)
	o.held = nil
	o.res.free()
}

// spill writes the held rows, sorted, as a run, and merges runs as
// they come (carry).
func (o *sortOp) spill(ctx context.Context) error {
	f, err := o.writeRun(func(w *ipc.Writer) error {
		if err := o.sorted(ctx, w.Write); err != nil {
			return fmt.Errorf("sort: spill: %w", err)
		}
		return nil
	})
	o.dropHeld()
	if err != nil {
		return err
	}
	o.runs = append(o.runs, sortRun{f: f})
	return o.carry(ctx)
}

// writeRun writes a new run of what fill writes to w; fill's errors come
// back as they are.
func (o *sortOp) writeRun(fill func(w *ipc.Writer) error) (*os.File, error) {
	f, err := spillfile.Create(o.tempDir, "sluice-sort-*.arrows")
	if err != nil {
		return nil, fmt.Errorf("sort: spill: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := ipc.NewWriter(bw, ipc.WithSchema(o.schema), ipc.WithAllocator(o.mem))
	err = fill(w)
	if cerr := w.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sort: spill: %w", cerr)
	}
	if ferr := bw.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("sort: spill: %w", ferr)
	}
	if err != nil {
		spillfile.Remove(f)
		return nil, err
	}
	return f, nil
}

// carry merges the last sortFanIn runs into one of the next level while
// they are all of one level, as a counter in base sortFanIn carries: the
// runs stay in input order, their levels never rising along it, fewer
// than sortFanIn of each level. So a sort of R runs keeps about
// sortFanIn*log(R)/log(sortFanIn) open, not R, and writes each row once
// per level.
func (o *sortOp) carry(ctx context.Context) error {
	for n := len(o.runs); n >= sortFanIn; n = len(o.runs) {
		for _, r := range o.runs[n-sortFanIn:] {
			if r.level != o.runs[n-1].level {
				return nil
			}
		}
		if err := o.mergeTail(ctx, sortFanIn); err != nil {
			return err
		}
	}
	return nil
}

// mergeTail merges the last k runs into one, which takes their place.
// They are consecutive in input order, so the merge, ties going to the
// earlier run, keeps the rows that tie in input order.
func (o *sortOp) mergeTail(ctx context.Context, k int) error {
	n := len(o.runs)
	tail := o.runs[n-k:]
	f, err := o.writeRun(func(w *ipc.Writer) error { return o.merge(ctx, tail, &runWriter{w: w}) })
	if err != nil {
		return err
	}
	level := 0
	for _, r := range tail {
		level = max(level, r.level+1)
		spillfile.Remove(r.f)
	}
	o.runs = append(o.runs[:n-k], sortRun{f: f, level: level})
	return nil
}

func (o *sortOp) finish(ctx context.Context) error {
	if len(o.runs) == 0 {
		err := o.sorted(ctx, func(r arrow.RecordBatch) error { return o.next.push(ctx, r) })
		o.dropHeld()
		if err != nil {
			return err
		}
		return o.next.finish(ctx)
	}
	if len(o.held) > 0 {
		if err := o.spill(ctx); err != nil {
			return err
		}
	}
	if err := o.mergeRuns(ctx); err != nil {
		return err
	}
	return o.next.finish(ctx)
}

func (o *sortOp) release() {
	o.dropHeld()
	for _, r := range o.runs {
		spillfile.Remove(r.f)
	}
	o.runs = nil
}

// runReader is one sorted input of a merge.
type runReader struct {
	idx  int // the input's place in input order, for ties
	src  Source
	rec  arrow.RecordBatch // current batch, owned
	keys []vec
	row  int
	at   int // index of rec in the chunk's sources, or -1
}

func (r *runReader) advance(ctx context.Context, ob *orderBy) (bool, error) {
	r.row++
	for r.rec == nil || r.row >= int(r.rec.NumRows()) {
		if r.rec != nil {
			r.rec.Release()
			r.rec = nil
		}
		rec, err := r.src.Next(ctx)
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		r.rec, r.row, r.at = rec, 0, -1
		r.keys = ob.keys(rec)
	}
	return true, nil
}

func (r *runReader) close() error {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	return r.src.Close()
}

type runHeap struct {
	ob   *orderBy
	runs []*runReader
}

func (h *runHeap) Len() int { return len(h.runs) }
func (h *runHeap) Less(i, j int) bool {
	a, b := h.runs[i], h.runs[j]
	c := h.ob.compare(a.keys, a.row, b.keys, b.row)
	return c < 0 || c == 0 && a.idx < b.idx
}
func (h *runHeap) Swap(i, j int) { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap) Push(x any)    { h.runs = append(h.runs, x.(*runReader)) }
func (h *runHeap) Pop() any {
	r := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return r
}

// mergeSorted merges sorted inputs in key order, ties going to the input
// with the lower idx, and sends the rows on outBatchRows at a time.
func mergeSorted(ctx context.Context, mem memory.Allocator, schema *arrow.Schema, ob *orderBy, inputs []*runReader, next operator) error {
	h := &runHeap{ob: ob}
	for _, r := range inputs {
		r.row = -1
		ok, err := r.advance(ctx, ob)
		if err != nil {
			return err
		}
		if ok {
			h.runs = append(h.runs, r)
		}
	}
	heap.Init(h)
	var srcs []arrow.RecordBatch
	var refs []rowRef
	defer func() { releaseAll(srcs) }()
	flush := func() error {
		if len(refs) == 0 {
			return nil
		}
		out, err := gatherRows(ctx, mem, schema, srcs, refs)
		releaseAll(srcs)
		srcs, refs = srcs[:0], refs[:0]
		for _, r := range inputs {
			r.at = -1
		}
		if err != nil {
			return err
		}
		err = next.push(ctx, out)
		out.Release()
		return err
	}
	for h.Len() > 0 {
		r := h.runs[0]
		if r.at < 0 {
			r.rec.Retain()
			srcs = append(srcs, r.rec)
			r.at = len(srcs) - 1
		}
		refs = append(refs, rowRef{int32(r.at), int32(r.row)})
		if len(refs) == outBatchRows {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := flush(); err != nil {
				return err
			}
		}
		ok, err := r.advance(ctx, ob)
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	return flush()
}

// mergeRuns merges the runs into next, sortFanIn at most: past that, the
// last ones, the shortest, are first merged into one, as few as leave
// sortFanIn (and sortFanIn at a time while more would be left).
func (o *sortOp) mergeRuns(ctx context.Context) error {
	for n := len(o.runs); n > sortFanIn; n = len(o.runs) {
		if err := o.mergeTail(ctx, min(sortFanIn, n-sortFanIn+1)); err != nil {
			return err
		}
	}
	return o.merge(ctx, o.runs, o.next)
}

// merge merges runs, consecutive in input order, into next in key order,
// ties in input order.
func (o *sortOp) merge(ctx context.Context, runs []sortRun, next operator) error {
	var inputs []*runReader
	defer func() {
		for _, r := range inputs {
			r.close()
		}
	}()
	for i, run := range runs {
		src, err := openRun(run.f, o.mem)
		if err != nil {
			return fmt.Errorf("sort: reading a spilled run: %w", err)
		}
		inputs = append(inputs, &runReader{idx: i, src: src, at: -1})
	}
	return mergeSorted(ctx, o.mem, o.schema, o.ob, inputs, next)
}

// openRun reads the Arrow IPC stream spilled to f from its start; the
// file stays open (it is the run's only name) until the run is released.
func openRun(f *os.File, mem memory.Allocator) (Source, error) {
	// A merge reads many runs at once: a small buffer each keeps its
	// memory that of the batches it holds.
	return readIPC(bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<62), 64<<10)).open(context.Background(), &env{mem: mem})
}
