package fanout

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/internal/fanouthook"
	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// Env is what a worker needs besides the spec: what its stages read and
// write and how to open stores.
type Env struct {
	// Exec is what the plan's stages read and write (a scan's link
	// model); its Output is not used, as a task writes its own.
	Exec exec.Env
	// Open opens the store a URL names; nil means store.Open.
	Open store.Opener
	// Mem allocates batches; nil means memory.DefaultAllocator.
	Mem memory.Allocator
	// Worker names this worker in records and errors (a host and pid).
	Worker string
	// Budget, when set, is called with the job's Memory (when above
	// zero) before the task runs: it returns the allocator to use
	// instead of Mem, its buffers within that budget, and bounds what
	// else the process holds (the Go heap); restore undoes that.
	Budget func(memory int64) (mem memory.Allocator, restore func())
}

// Task identifies one attempt of a task: the spec's URL, the phase, the
// task's index in it and, optionally, an attempt label from the driver
// (a random suffix makes every attempt's token unique either way).
type Task struct {
	Spec    string
	Phase   int
	Index   int
	Attempt string
	// DriverFiles are files the driver removes when the job ends, which
	// a worker that finds the driver gone removes (EnvDriverFiles).
	DriverFiles []string
	// SpecSum is the SHA-256 of the spec's bytes its driver wrote
	// (PhaseRun.SpecSum): the worker runs no other (see sign.go).
	SpecSum string
	// Args, when not nil, are the worker's arguments after the
	// executor's command instead of SPEC --phase P (PhaseRun.Argv): a
	// worker of another kind than a job's task, such as sluice bench's,
	// still told its index and attempt in the environment.
	Args []string
}

// RunTask runs one attempt of a task in this process: it reads the
// spec, runs its phase's stages over its input, writes its output under
// a name no other attempt uses and then its done record. When it fails
// after the spec was read, it leaves a failure record for the driver.
func RunTask(ctx context.Context, t Task, env Env) (err error) {
	start := time.Now()
	if env.Mem == nil {
		env.Mem = memory.DefaultAllocator
	}
	if env.Worker == "" {
		host, _ := os.Hostname()
		env.Worker = fmt.Sprintf("%s pid %d", host, os.Getpid())
	}
	base, ok := strings.CutSuffix(t.Spec, specKey)
	if !ok {
		return fmt.Errorf("job spec URL %q does not end in %s", t.Spec, specKey)
	}
	st, prefix, err := openWith(ctx, env.Open, base)
	if err != nil {
		return fmt.Errorf("job store: %w", err)
	}
	defer closeStore(env.Open, st)
	j := &job{st: st, prefix: prefix}
	var b []byte
	if err := j.do(ctx, func() (err error) { b, err = st.ReadAll(ctx, prefix+specKey); return err }); err != nil {
		return err
	}
	if err := checkPin(b, t.SpecSum, t.Spec); err != nil {
		return err
	}
	spec, err := ParseSpec(b)
	if err != nil {
		return fmt.Errorf("%s: %w", t.Spec, err)
	}
	if t.Phase < 0 || t.Phase >= len(spec.Phases) {
		return fmt.Errorf("phase %d: the job has %d", t.Phase, len(spec.Phases))
	}
	ph := spec.Phases[t.Phase]
	if t.Index < 0 || t.Index >= ph.Tasks {
		return fmt.Errorf("task %d: phase %d has %d", t.Index, t.Phase, ph.Tasks)
	}
	token, err := newToken(t.Attempt)
	if err != nil {
		return err
	}
	// A worker whose driver is gone stops (see lease.go).
	ctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() { watchLease(ctx, j, cancel); close(watched) }()
	// Runs before the store is closed (deferred above).
	defer func() { cancel(nil); <-watched }()
	defer func() {
		if cause := context.Cause(ctx); err != nil && errors.Is(cause, errDriverGone) {
			err = cause
			// What the dead driver would have removed at its end (its
			// workers' credentials) goes with its workers instead.
			for _, f := range t.DriverFiles {
				os.Remove(f)
			}
		}
	}()
	defer func() {
		if err != nil && ctx.Err() == nil {
			f := Failure{Task: t.Index, Attempt: token, Worker: env.Worker, Error: oneLine(err), Start: start, End: time.Now()}
			if le := (*LostInputError)(nil); errors.As(err, &le) {
				f.Lost = &le.Lost
			}
			f.Permanent = errors.Is(err, exec.ErrInvalid) || errors.Is(err, exec.ErrTooLarge)
			rec, _ := json.Marshal(f)
			// Best effort: the driver falls back on the worker's exit.
			j.put(context.WithoutCancel(ctx), failKey(t.Phase, t.Index, token), rec)
		}
	}()
	if spec.Memory > 0 && env.Budget != nil {
		mem, restore := env.Budget(spec.Memory)
		defer restore()
		env.Mem = mem
	}
	xenv := env.Exec
	xenv.Output = nil
	xenv.ProgramEnv = append(xenv.ProgramEnv, programEnv(spec, ph, t.Index)...)
	// A map task of a join's other side runs that side's pipeline.
	pl := spec.Plan
	if ph.Other != 0 {
		pl = spec.Plan.Stages[ph.Other].(*plan.Join).Other // ParseSpec checked it
	}
	p, err := exec.Compile(pl, xenv)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	// The scan fetches only what the whole pipeline reads, as it does in
	// one process.
	p = exec.PushColumns(p)
	out := Output{Task: t.Index, Attempt: token, Worker: env.Worker, Start: start}
	w := &taskRun{ctx: ctx, env: env, spec: spec, plan: pl, j: j, phase: t.Phase, ph: ph, index: t.Index, out: &out}
	if err := w.run(p); err != nil {
		return err
	}
	pause, err := fanouthook.Pause(t.Phase, t.Index, t.Attempt)
	if err != nil {
		return err
	}
	if err := fanouthook.Fail(t.Phase, t.Index, t.Attempt); err != nil {
		return err
	}
	if pause > 0 {
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	out.Retries = j.retries.Load()
	if out.Scan != nil {
		out.InRows, out.InBytes = out.Scan.Rows, out.Scan.BytesFetched
	}
	out.End = time.Now()
	out.MaxRSS = maxRSS()
	rec, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return j.put(ctx, doneKey(t.Phase, t.Index, token), rec)
}

// programEnv tells the programs of a task's exec stages which task they
// run in and what it reads.
func programEnv(spec *Spec, ph Phase, index int) []string {
	piece := fmt.Sprintf("part %d", index)
	if ph.Kind == PhaseMap && index < len(ph.Pieces) {
		pc := ph.Pieces[index]
		switch sc, ok := spec.Plan.Stages[0].(*plan.Scan); {
		case pc.Table != nil:
			piece = pc.Table.File.URL
		case !pc.Whole:
			piece = fmt.Sprintf("%s:%d-%d", pc.Key, pc.Lo, pc.Hi-1)
		case ok && pc.URL < len(sc.URLs):
			piece = sc.URLs[pc.URL]
		}
	}
	return []string{"SLUICE_PHASE=" + ph.Kind, "SLUICE_TASK_INDEX=" + strconv.Itoa(index), "SLUICE_PIECE=" + piece}
}

func newToken(label string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b[:])
	if label != "" {
		tok = label + "-" + tok
	}
	if !isToken(tok) {
		return "", fmt.Errorf("attempt label %q: want lower-case letters, digits and -", label)
	}
	return tok, nil
}

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// job is the store under a job's prefix.
type job struct {
	st     *store.Store
	prefix string
	// retries counts the requests tried again after a retryable error
	// (a 503 SlowDown above all), fetch's included.
	retries atomic.Int64
}

// do calls fn, a request to the store, again after a retryable error
// (internal/retry's policy), and counts the retries.
func (j *job) do(ctx context.Context, fn func() error) error {
	n := 0
	err := retry.Policy{}.Do(ctx, func() error {
		if n++; n > 1 {
			j.retries.Add(1)
		}
		return fn()
	})
	return err
}

func (j *job) put(ctx context.Context, key string, b []byte) error {
	_, err := j.st.Put(ctx, j.prefix+key, bytes.NewReader(b), j.writeOptions())
	return err
}

// writeOptions has every request of a write retried by do, so that one
// failed part costs one part, not the object.
func (j *job) writeOptions() store.WriteOptions { return store.WriteOptions{Retry: j.do} }

func (j *job) url(key string) string { return j.st.URL(j.prefix + key) }

// records calls fn with the key and bytes of each record of a kind
// ("done" or "fail") that attempts of a task of phase pi left, in key
// order, while fn says more.
func (j *job) records(ctx context.Context, kind string, pi, task int, fn func(key string, b []byte) (more bool, err error)) error {
	var infos []store.ObjectInfo
	if err := j.do(ctx, func() (err error) { infos, err = j.st.List(ctx, j.prefix+taskPrefix(kind, pi, task)); return err }); err != nil {
		return err
	}
	for _, info := range infos {
		var b []byte
		if err := j.do(ctx, func() (err error) { b, err = j.st.ReadAll(ctx, info.Key); return err }); err != nil {
			return err
		}
		if more, err := fn(info.Key, b); err != nil || !more {
			return err
		}
	}
	return nil
}

type taskRun struct {
	ctx  context.Context
	env  Env
	spec *Spec
	plan *plan.Plan
	j    *job
	// dst and name say where the output goes: under the job's prefix,
	// or, for the last phase of a job with Spec.Out, the destination.
	dst   *job
	name  func(ext string) string
	phase int
	ph    Phase
	index int
	out   *Output
}

// opts are the task's run options. Of the job's Memory, a quarter (at
// most) holds parts fetched and not yet decoded (readBudget), a quarter
// the buffers freed and kept for reuse (Env.Budget's pool) and the
// collector's garbage, and the rest what sorts, joins and aggregations
// hold before they spill: counting only their rows against the whole
// budget took reducers 15-20 % past it.
func (w *taskRun) opts() exec.Options {
	o := exec.Options{Mem: w.env.Mem, Workers: w.spec.Threads, Open: w.env.Open}
	if w.spec.Memory > 0 {
		o.Memory = max(w.spec.Memory-w.readBudget()-w.spec.Memory/4, 1)
	}
	return o
}

// readBudget is what a reducer holds of its parts fetched and not yet
// decoded: a quarter of the job's Memory, 64 MiB at most.
func (w *taskRun) readBudget() int64 {
	if w.spec.Memory > 0 {
		return max(min(readBudget, w.spec.Memory/4), 64<<10)
	}
	return readBudget
}

func (w *taskRun) run(p exec.Pipeline) (err error) {
	w.dst = w.j
	w.name = func(ext string) string { return dataKey(w.phase, w.index, w.spec.Spread, w.out.Attempt, ext) }
	if w.spec.Out != "" && w.phase == len(w.spec.Phases)-1 {
		st, prefix, err := openWith(w.ctx, w.env.Open, w.spec.Out)
		if err != nil {
			return fmt.Errorf("destination: %w", err)
		}
		defer closeStore(w.env.Open, st)
		w.dst, w.out.Dest = &job{st: st, prefix: prefix}, true
		id := w.spec.id()
		w.name = func(ext string) string { return destKey(w.index, id, w.out.Attempt, ext) }
	}
	var src exec.SourceStage
	switch w.ph.Kind {
	case PhaseMap:
		s, check, perr := w.pieceSource(p.Source, w.ph.Pieces[w.index], func(st scan.Stats) {
			c := ScanCounts{Rows: st.Rows, RowGroups: st.RowGroups, RowGroupsPruned: st.RowGroupsPruned,
				BytesNeeded: st.BytesNeeded, BytesFetched: st.BytesFetched, Requests: st.Requests}
			if w.out.Scan == nil {
				w.out.Scan = new(ScanCounts)
			}
			w.out.Scan.add(c)
		})
		if perr != nil {
			return perr
		}
		src = s
		defer func() {
			if err == nil {
				err = check()
			}
		}()
	case PhaseReduce:
		budget := w.readBudget()
		if w.ph.Build != 0 {
			budget /= 2 // the other side's parts take the other half
		}
		s, rs, perr := w.partSource(w.phase-1, budget)
		if perr != nil {
			return perr
		}
		src = s
		defer func() {
			if err != nil {
				rs.checkPartRead()
			}
			if rerr := rs.close(); rerr != nil {
				err = rerr
			}
		}()
	}
	stages := append([]exec.Stage(nil), p.Stages[w.ph.From:w.ph.To]...)
	if w.ph.Build != 0 {
		ins, perr := w.partInputs(w.ph.Build - 1)
		if perr != nil {
			return perr
		}
		// The join opens its other side for its schema, then again to
		// read it: each open reads the parts anew.
		var sets []*streamSet
		other := exec.Reopen(func() (exec.SourceStage, error) {
			srcs, rs := w.j.streamSet(w.ctx, ins, false, w.readBudget()/2)
			sets = append(sets, rs)
			return exec.Concat(srcs...), nil
		})
		defer func() {
			for _, rs := range sets {
				if err != nil {
					rs.checkPartRead()
				}
				if rerr := rs.close(); rerr != nil {
					err = rerr
				}
			}
		}()
		stages = joinParts(w.plan.Stages[1+w.ph.From].(*plan.Join), other)
	}
	if w.ph.TopN > 0 {
		sort, ok := at(w.plan.Stages[1:], w.ph.To-1).(*plan.Sort)
		if !ok || w.ph.To <= w.ph.From {
			return fmt.Errorf("spec: top_n on a phase that does not end in a sort")
		}
		keys := make([]exec.SortKey, len(sort.Keys))
		for i, k := range sort.Keys {
			keys[i] = exec.SortKey{Column: k.Column, Desc: k.Desc}
		}
		stages[len(stages)-1] = exec.Top(w.ph.TopN, keys)
	}
	if w.ph.Agg >= 0 {
		agg := p.Stages[w.ph.Agg]
		if w.ph.Output == OutPartial || w.ph.Combine {
			partial, final, err := exec.CompileAgg(w.plan.Stages[1+w.ph.Agg])
			if err != nil {
				return fmt.Errorf("plan: stage %d: %w", w.ph.Agg+2, err)
			}
			agg = partial
			if w.ph.Combine && w.ph.Kind == PhaseReduce {
				agg = final
			}
		}
		stages = append(stages, agg)
	}
	switch w.ph.Output {
	case OutStream, OutPartial:
		return w.writeStream(src, stages)
	case OutShuffle:
		return w.writeShuffle(src, stages)
	case OutFile:
		key := w.name("arrow")
		if err := exec.Run(w.ctx, exec.Pipeline{Source: src, Stages: append(stages, exec.Write(w.dst.url(key)))}, w.opts()); err != nil {
			return err
		}
		info, err := w.dst.st.Stat(w.ctx, w.dst.prefix+key)
		if err != nil {
			return err
		}
		w.out.Key, w.out.Size = key, info.Size
		return nil
	}
	return fmt.Errorf("output %q", w.ph.Output)
}

// pieceSource is the scan of the pipeline restricted to one piece, and a
// check, for after the run, that the scan found every row group of it (a
// key that matched nothing would otherwise read as an empty piece). The
// scan's figures go to stats, not to the worker's standard error.
func (w *taskRun) pieceSource(src exec.SourceStage, pc Piece, stats func(scan.Stats)) (exec.SourceStage, func() error, error) {
	sc, ok := w.plan.Stages[0].(*plan.Scan)
	if !ok {
		return nil, nil, fmt.Errorf("plan: the source is %s, not scan", w.plan.Stages[0].Name())
	}
	urls := sc.URLs
	statsTo := func(_ string, st scan.Stats) { stats(st) }
	if pc.URL >= len(urls) {
		return nil, nil, fmt.Errorf("plan: scan has %d URLs, the piece reads URL %d", len(urls), pc.URL+1)
	}
	url := urls[pc.URL]
	if pc.Whole {
		s, err := exec.ScanPiece(src, url, nil, statsTo)
		return s, func() error { return nil }, err
	}
	if pc.Table != nil {
		// One data file of an Iceberg table, whole, with its deletes, as
		// the driver planned it (the filter may still prune it).
		s, err := exec.ScanTablePiece(src, url, *pc.Table, statsTo)
		return s, func() error { return nil }, err
	}
	if pc.Scan != "" {
		url = pc.Scan
	}
	var mu sync.Mutex
	found := map[int]bool{}
	key, lo, hi := pc.Key, pc.Lo, pc.Hi
	rowGroups := func(k string, rg int) bool {
		if k != key || rg < lo || rg >= hi {
			return false
		}
		mu.Lock()
		found[rg] = true
		mu.Unlock()
		return true
	}
	check := func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(found) != hi-lo {
			return fmt.Errorf("piece %s: the scan of %s found %d of its %d row groups", pc, url, len(found), hi-lo)
		}
		return nil
	}
	s, err := exec.ScanPiece(src, url, rowGroups, statsTo)
	return s, check, err
}

// writeStream runs the stages into one Arrow IPC stream object.
func (w *taskRun) writeStream(src exec.SourceStage, stages []exec.Stage) error {
	key := w.name("arrows")
	sw, err := w.dst.st.NewWriter(w.ctx, w.dst.prefix+key, w.dst.writeOptions())
	if err != nil {
		return err
	}
	sum := crc32.New(castagnoli)
	err = exec.Run(w.ctx, exec.Pipeline{Source: src, Stages: append(stages, exec.WriteIPCCounted(io.MultiWriter(sw, sum), &w.out.Rows))}, w.opts())
	if err != nil {
		sw.Abort()
		return err
	}
	if err := sw.Close(); err != nil {
		return err
	}
	w.out.Key, w.out.Size, w.out.CRC = key, sw.Written(), sum.Sum32()
	return nil
}

// writeShuffle splits the stages' output by the shuffle's keys into one
// IPC stream per part, spilled to a temporary file as they grow, and
// writes them as one object, part after part, with the index at its end.
func (w *taskRun) writeShuffle(src exec.SourceStage, stages []exec.Stage) error {
	n := w.ph.Parts
	sp, err := newSpill(n)
	if err != nil {
		return err
	}
	defer sp.close()
	writers := make([]*ipc.Writer, n)
	rows := make([]int64, n)
	var split *exec.Splitter
	var bindErr error
	defer func() {
		for _, wr := range writers {
			if wr != nil {
				wr.Close()
			}
		}
	}()
	var posSchema *arrow.Schema
	var rowsSeen int64
	posName := PositionColumn
	if w.ph.Other != 0 {
		posName = OtherPositionColumn
	}
	// Either side of a partitioned join numbers its rows by batch too
	// (joinPosition), so the driver can cut the joined rows into one
	// process's batches again.
	join := w.ph.Other != 0 || w.phase+1 < len(w.spec.Phases) && w.spec.Phases[w.phase+1].Build != 0
	var batches int64
	sink := exec.Collect(func(s *arrow.Schema) {
		if w.ph.Position {
			if s.FieldIndices(posName) != nil {
				bindErr = fmt.Errorf("%w: the input has a column named %s, which the fan-out uses", exec.ErrInvalid, posName)
				return
			}
			md := s.Metadata()
			s = arrow.NewSchema(append(s.Fields(), arrow.Field{Name: posName, Type: arrow.PrimitiveTypes.Int64}), &md)
			posSchema = s
		}
		split, bindErr = exec.NewSplitter(s, w.ph.ShuffleBy, n, w.env.Mem)
		for r := range writers {
			writers[r] = ipc.NewWriter(sp.writer(r), ipc.WithSchema(s), ipc.WithAllocator(w.env.Mem))
		}
	}, func(rec arrow.RecordBatch) error {
		if bindErr != nil {
			return bindErr
		}
		if posSchema != nil {
			from := int64(w.index)<<40 + rowsSeen
			if join {
				if rec.NumRows() >= 1<<joinRowBits || batches >= 1<<joinRowBits {
					return fmt.Errorf("a partitioned join numbers at most %d batches of %d rows a task", 1<<joinRowBits, 1<<joinRowBits)
				}
				from = int64(w.index)<<(2*joinRowBits) | batches<<joinRowBits
				batches++
			}
			rec = exec.WithPositions(w.env.Mem, rec, posName, from)
			defer rec.Release()
			rowsSeen += rec.NumRows()
		}
		parts, err := split.Split(w.ctx, rec)
		if err != nil {
			return err
		}
		defer func() {
			for _, b := range parts {
				if b != nil {
					b.Release()
				}
			}
		}()
		for r, b := range parts {
			if b == nil {
				continue
			}
			if err := writers[r].Write(b); err != nil {
				return err
			}
			rows[r] += b.NumRows()
		}
		return nil
	})
	if err := exec.Run(w.ctx, exec.Pipeline{Source: src, Stages: append(stages, sink)}, w.opts()); err != nil {
		return err
	}
	if bindErr != nil {
		return bindErr
	}
	parts := make([]Part, n)
	readers := make([]io.Reader, 0, n+1)
	var off int64
	for r, wr := range writers {
		if err := wr.Close(); err != nil { // writes the end-of-stream marker
			return err
		}
		writers[r] = nil
		parts[r] = Part{Off: off, Len: sp.size[r], CRC: sp.crc[r].Sum32(), Rows: rows[r]}
		off += sp.size[r]
		w.out.Rows += rows[r]
	}
	footer, err := shuffleFooter(parts)
	if err != nil {
		return err
	}
	key := w.name("shuffle")
	for r := range n {
		rd, err := sp.reader(r)
		if err != nil {
			return err
		}
		readers = append(readers, rd)
	}
	readers = append(readers, bytes.NewReader(footer))
	size, err := w.dst.st.Put(w.ctx, w.dst.prefix+key, io.MultiReader(readers...), w.dst.writeOptions())
	if err != nil {
		return err
	}
	if want := off + int64(len(footer)); size != want {
		return fmt.Errorf("shuffle object %s: wrote %d bytes, want %d", w.dst.url(key), size, want)
	}
	w.out.Key, w.out.Size, w.out.Parts = key, size, parts
	return nil
}

// partSource reads this reducer's part of every map object the manifest
// before it lists, in map order: ranged reads through fetch, all in
// flight together within its memory budget, each checked against its
// checksum.
func (w *taskRun) partSource(prev int, budget int64) (exec.SourceStage, *streamSet, error) {
	ins, err := w.partInputs(prev)
	if err != nil {
		return nil, nil, err
	}
	srcs, rs := w.j.streamSet(w.ctx, ins, false, budget)
	return exec.Concat(srcs...), rs, nil
}

// partInputs are this reducer's parts of the map objects of phase prev,
// in map order, counted into its output's input figures.
func (w *taskRun) partInputs(prev int) ([]input, error) {
	var b []byte
	if err := w.j.do(w.ctx, func() (err error) { b, err = w.j.st.ReadAll(w.ctx, w.j.prefix+manifestKey(prev)); return err }); err != nil {
		return nil, err
	}
	m, err := parseManifest(b, prev, w.spec.Phases[prev])
	if err != nil {
		return nil, err
	}
	ins := make([]input, len(m.Outputs))
	for i, o := range m.Outputs {
		pt := o.Parts[w.index]
		w.out.InRows += pt.Rows
		w.out.InBytes += pt.Len
		ins[i] = input{key: w.j.prefix + o.Key, off: pt.Off, n: pt.Len, size: o.Size, crc: pt.CRC,
			name: fmt.Sprintf("part %d of %s", w.index, w.j.url(o.Key)),
			from: &Lost{Phase: prev, Task: i, Key: o.Key}}
	}
	return ins, nil
}

// joinParts is a reducer's join of its part of the stream with its part
// of the other side, each in its dataset's order, and then each row's
// number for the driver's merge: the stream row's, or for an unmatched
// row of the other side its number there past every stream row's.
func joinParts(j *plan.Join, other exec.SourceStage) []exec.Stage {
	stages := []exec.Stage{exec.JoinOf(j, exec.Pipeline{Source: other})}
	opos := j.Prefix + OtherPositionColumn
	switch j.How {
	case "semi", "anti":
	case "right", "full":
		stages = append(stages, exec.Extend(exec.Computed{Name: PositionColumn,
			Expr: fmt.Sprintf("coalesce(%s, %s + %d)", PositionColumn, opos, joinTail)}), exec.Drop(opos))
	default:
		stages = append(stages, exec.Drop(opos))
	}
	return stages
}
