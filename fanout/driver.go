package fanout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/internal/fanouthook"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/store"
)

// Options configure Run.
type Options struct {
	// Workers is how many tasks run at once (worker processes, pods).
	// Default 4.
	Workers int
	// Threads is how many batches each worker maps at once (0: its cores).
	Threads int
	// Store is the URL under which the job's prefix (job-ID/) is made;
	// empty means a temporary directory.
	Store string
	// Out, when set, is a prefix URL where the last phase's tasks write
	// the results, one object per task (part-NNNNN.JOB.ATTEMPT.arrows, or
	// .arrow for a reducer's groups), with manifest.json listing them in
	// order; the pipeline must then end with the last stage the workers
	// run (the per-batch stages, or a shuffle's aggregation), with no sink.
	Out string
	// Resume, when set, is the prefix of a job whose driver died: Run
	// reads its spec (the plan, the phases, the destination) instead of
	// planning p, which may be nil, keeps the phases whose manifests are
	// written and the tasks whose outputs are, and runs the rest.
	Resume string
	// Key signs the job's spec (sigKey) so that a driver resuming it
	// trusts only a spec written by one holding the same key; it stays
	// in this process (the workers get a pin of the spec instead, see
	// sign.go). Without it a key of this run's own signs the spec, and
	// the job cannot be resumed.
	Key []byte
	// Overwrite lets Out name a prefix that holds objects already: once
	// the job succeeds, every part there that it did not write is
	// deleted, so the prefix holds one job's parts and manifest. Without
	// it such a prefix is refused before anything runs.
	Overwrite bool
	// Keep keeps the job's committed outputs and manifests at the end
	// (losers and leftovers are deleted either way).
	Keep bool
	// Attempts is how many times a task is started before the job fails
	// (retries and the straggler's duplicate included). Default 3.
	Attempts int
	// PieceBytes is the size the scan's files are cut into map tasks by
	// (see scan.Pieces). Default 64 MiB.
	PieceBytes int64
	// Spread is how many key prefixes each phase's data objects (the
	// shuffle's map objects above all) are spread over, so that a large
	// shuffle keeps under S3's per-prefix request rates: 0 chooses one
	// per task of the largest phase, up to MaxSpread; 1 puts them all
	// under one prefix.
	Spread int
	// Executor runs the phases' tasks; nil means NewLocal(nil).
	Executor Executor
	// Open opens the store a URL names, for the driver's own reads and
	// writes; nil means store.Open.
	Open store.Opener
	// Mem allocates the driver's batches.
	Mem memory.Allocator
	// Env is what the stages this process runs read and write (show and
	// to-csv write to its Stdout), and its Output ends a plan with no
	// sink.
	Env exec.Env
	// Progress, when set, is called whenever a task starts or ends.
	Progress func(Progress)
	// Events, when set, gets the job's event log, one JSON object a line
	// (Event): the job and its phases, and every attempt of every task
	// with its worker, times, outcome, and the rows and bytes it read
	// and wrote. Run returns the first error writing it.
	Events io.Writer
	// Log, when set, gets the job's prefix and the time each phase took.
	Log func(format string, a ...any)
	// Started, when set, is told the job's URL once its prefix is made,
	// before any task runs: where its objects are should this process die.
	Started func(jobURL string)
	// ScanStats, when set, is called after the map phase with what the
	// scans of its committed attempts read, summed over its tasks.
	ScanStats func(tasks int, read ScanCounts)
	// Broadcast is the largest right side of a join in the map tasks that
	// the driver reads once and writes to the job's store for every task
	// to read (see broadcastJoins); a larger one is read by each task
	// itself. Zero: 256 MiB; negative: never.
	Broadcast int64
	// Join is how a join's two sides meet: JoinBroadcast, JoinPartitioned
	// (both through a shuffle: see joinPhases), or JoinAuto (""): a side
	// that is a scan and per-batch stages is partitioned when its footers
	// give more than Broadcast bytes, or for a right or full join.
	Join string
	// Memory, when above zero, is each worker's budget (--memory): what a
	// reducer holds of its parts as they arrive (a quarter, 64 MiB at
	// most) and of its sort or join before they spill (the rest), the
	// Go heap held to it plus 64 MiB (Env.Budget). Zero: exec's defaults.
	Memory int64
}

// withDefaults fills in the documented defaults of o's zero fields.
func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.PieceBytes <= 0 {
		o.PieceBytes = 64 << 20
	}
	if o.Broadcast == 0 {
		o.Broadcast = 256 << 20
	}
	if o.Join == "" {
		o.Join = JoinAuto
	}
	if len(o.Key) == 0 {
		o.Key = make([]byte, 32)
		rand.Read(o.Key)
	}
	return o
}

func (o Options) open(ctx context.Context, url string) (*store.Store, string, error) {
	return openWith(ctx, o.Open, url)
}

// openWith opens url with open, or store.Open when it is nil.
func openWith(ctx context.Context, open store.Opener, url string) (*store.Store, string, error) {
	if open != nil {
		return open(ctx, url)
	}
	return store.Open(ctx, url, store.Options{})
}

// closeStore closes a store this package opened itself; one from an
// Open function belongs to its caller.
func closeStore(open store.Opener, st *store.Store) {
	if open == nil {
		st.Close()
	}
}

// Progress is the state of the running phase.
type Progress struct {
	// Index is the phase's number in the job (0 first), Phase its kind.
	Index                        int
	Phase                        string
	Tasks, Done, Running, Failed int // Failed counts attempts
	// What the phase's committed attempts read and wrote so far: a map
	// task's scan (rows, bytes fetched) or a reducer's parts, and its
	// output.
	RowsIn, BytesIn, RowsOut, BytesOut int64
}

// TaskError is a task that failed every attempt; it fails the job.
type TaskError struct {
	Phase    string
	Task     int
	Tasks    int
	Piece    string // the map task's input, empty for a reducer
	Worker   string
	Attempts int
	Err      string
}

func (e *TaskError) Error() string {
	in := ""
	if e.Piece != "" {
		in = " (" + e.Piece + ")"
	}
	return fmt.Sprintf("%s task %d of %d%s failed %d time(s), last on worker %s: %s", e.Phase, e.Task, e.Tasks, in, e.Attempts, e.Worker, e.Err)
}

// Run runs plan p over many workers: it plans the
// phases, writes the job's spec under a new prefix of opts.Store, runs
// each phase's tasks with the executor, commits one attempt per task in
// the phase's manifest, and runs the driver's part of the pipeline (its
// last stages, ending in p's sink) over the committed outputs. Results
// are those of exec.Run(p) in one process, to the bit.
//
// The job's objects are removed at the end, on failure and cancellation
// too, except with Keep.
func Run(ctx context.Context, p *plan.Plan, opts Options) (err error) {
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("%w: %v", exec.ErrInvalid, err)
	}
	opts = opts.withDefaults()
	if opts.Mem == nil {
		opts.Mem = memory.DefaultAllocator
	}
	logf := func(string, ...any) {}
	if opts.Log != nil {
		// One line at a time: the lease's goroutine logs too.
		var mu sync.Mutex
		logf = func(format string, a ...any) {
			mu.Lock()
			defer mu.Unlock()
			opts.Log(format, a...)
		}
	}
	var resumed *Spec
	var resumedSum string
	if opts.Resume != "" {
		if resumed, resumedSum, err = readSpec(ctx, opts); err != nil {
			return err
		}
		p = resumed.Plan
		opts.Out, opts.Threads, opts.Spread = resumed.Out, resumed.Threads, resumed.Spread
		if resumed.PieceBytes > 0 {
			opts.PieceBytes = resumed.PieceBytes
		}
		if resumed.Broadcast != 0 {
			opts.Broadcast = resumed.Broadcast
		}
		opts.Join = resumed.Join
	}
	// Compiled here to check the plan whole before any worker starts, and
	// for the part this process runs.
	compiled, err := exec.Compile(p, opts.Env)
	if err != nil {
		return err
	}
	start := time.Now()
	pl, err := makePlan(ctx, p, compiled, opts)
	if err != nil {
		return err
	}
	logf("planned %d phase(s), %d map task(s) in %v", len(pl.phases), pl.phases[pl.mapPhase()].Tasks, time.Since(start).Round(time.Millisecond))
	for i, ph := range pl.phases {
		logf("phase %d (%s): %s", i, ph.Kind, ph.describe(p))
	}
	if opts.Out != "" {
		if !strings.HasSuffix(opts.Out, "/") {
			opts.Out += "/"
		}
		switch {
		case pl.finalAgg >= 0:
			return fmt.Errorf("%w: with a destination the workers run the whole pipeline, but %s folds in one process: put a shuffle before it, so reducers write its groups", exec.ErrInvalid, p.Stages[1+pl.finalAgg].Name())
		case pl.finalFrom < len(p.Stages)-1:
			return fmt.Errorf("%w: with a destination the workers run the whole pipeline, but %s runs in one process: end the pipeline before it", exec.ErrInvalid, p.Stages[1+pl.finalFrom].Name())
		}
		if !opts.Overwrite && resumed == nil {
			if err := checkEmpty(ctx, opts.Open, opts.Out); err != nil {
				return err
			}
		}
	}

	if strings.HasPrefix(opts.Store, "mem://") {
		return fmt.Errorf("%w: the job's store %s lives in this process; workers need one they can reach (file:// or s3://)", exec.ErrInvalid, opts.Store)
	}
	jobURL, removeDir := "", func() {}
	if resumed != nil {
		jobURL = resumed.Job
	} else if jobURL, removeDir, err = newJobPrefix(opts.Store); err != nil {
		return err
	}
	st, prefix, err := opts.open(ctx, jobURL)
	if err != nil {
		removeDir()
		return fmt.Errorf("job store: %w", err)
	}
	defer closeStore(opts.Open, st)
	j := &job{st: st, prefix: prefix}
	d := &driver{ctx: ctx, opts: opts, j: j, jobURL: jobURL, logf: logf, events: newEvents(opts.Events),
		again: map[int]bool{}, recomputed: map[[2]int]int{}}
	defer func() {
		if d.events != nil {
			ev := Event{Type: EventJobEnd, Time: time.Now()}
			if err != nil {
				ev.Error = oneLine(err)
			}
			d.events.write(ev)
			if err == nil {
				err = d.events.err
			}
		}
	}()
	defer func() {
		// Cleanup must happen even when ctx is cancelled (Ctrl-C).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if cerr := d.cleanup(cctx, opts.Keep && err == nil); err == nil && cerr != nil {
			err = cerr
		}
		if opts.Out != "" && d.spec != nil {
			if cerr := d.cleanupDest(cctx, err == nil); err == nil && cerr != nil {
				err = cerr
			}
		}
		if !(opts.Keep && err == nil) {
			removeDir()
		}
	}()
	logf("job %s", jobURL)
	if opts.Started != nil {
		opts.Started(jobURL)
	}

	spec, sum := resumed, resumedSum
	if resumed != nil {
		for i := range pl.phases {
			// A job planned before map tasks combined runs as planned.
			if i < len(resumed.Phases) && pl.phases[i].Combine && !resumed.Phases[i].Combine {
				pl.phases[i].Combine = false
				if pl.phases[i].Kind == PhaseMap {
					pl.phases[i].Agg = -1
				}
			}
		}
		if err := samePhases(resumed.Phases, pl.phases); err != nil {
			return fmt.Errorf("resume %s: %w", jobURL, err)
		}
		d.resumed = true
	} else {
		sent, err := d.broadcastJoins(p, pl)
		if err != nil {
			return err
		}
		spec = newSpec(sent, jobURL, pl, opts)
		b, err := spec.Marshal()
		if err != nil {
			return err
		}
		hooks := fanouthook.From(ctx)
		if hooks.SpecEdit != nil {
			b = hooks.SpecEdit(b)
		}
		if err := j.put(ctx, specKey, b); err != nil {
			return err
		}
		if err := j.put(ctx, sigKey, []byte(signSpec(opts.Key, b))); err != nil {
			return err
		}
		sum = specSum(b)
		if hooks.AfterSpec != nil {
			hooks.AfterSpec(ctx, st, prefix+specKey)
		}
	}
	d.spec, d.specSum = spec, sum
	if d.events != nil {
		ev := Event{Type: EventJob, Time: time.Now(), Version: EventVersion, Job: jobURL, Plan: p.String(), Workers: opts.Workers}
		for _, ph := range spec.Phases {
			ev.PhaseList = append(ev.PhaseList, PhaseInfo{Kind: ph.Kind, Tasks: ph.Tasks})
		}
		d.events.write(ev)
	}
	exe := opts.Executor
	if exe == nil {
		exe = NewLocal(nil)
	}
	d.exe = exe
	stopLease, err := d.holdLease(ctx)
	if err != nil {
		return err
	}
	// Stopped before the cleanup above removes the job (deferred
	// earlier, it runs later), so no beat writes into a removed job.
	defer stopLease()
	for i := range spec.Phases {
		t0 := time.Now()
		if d.resumed {
			m, err := d.committedManifest(i)
			if err != nil {
				return err
			}
			if m != nil {
				logf("phase %d (%s): committed before the driver died", i, spec.Phases[i].Kind)
				d.manifests = append(d.manifests, m)
				continue
			}
		}
		m, err := d.runPhase(i)
		for le := (*LostInputError)(nil); errors.As(err, &le); {
			if err = d.recompute(le.Lost); err != nil {
				return err
			}
			d.again[i] = true
			m, err = d.runPhase(i)
		}
		if err != nil {
			return err
		}
		d.manifests = append(d.manifests, m)
		if after := fanouthook.From(ctx).AfterPhase; after != nil {
			keys := make([]string, len(m.Outputs))
			for t, o := range m.Outputs {
				keys[t] = d.j.prefix + o.Key
			}
			after(ctx, d.j.st, i, keys)
		}
		var retries int64
		var read ScanCounts
		scanned := 0
		for _, o := range m.Outputs {
			retries += o.Retries
			if o.Scan != nil {
				read.add(*o.Scan)
				scanned++
			}
		}
		if opts.ScanStats != nil && scanned > 0 && spec.Phases[i].Other == 0 { // the stream's scan, not a join's other side
			opts.ScanStats(scanned, read)
		}
		logf("phase %d (%s): %d task(s) in %v, %d failed attempt(s), %d request(s) retried by the committed attempts, %d by the driver",
			i, spec.Phases[i].Kind, spec.Phases[i].Tasks, time.Since(t0).Round(time.Millisecond), d.failed, retries, d.j.retries.Swap(0))
	}
	if opts.Out != "" {
		return d.publish()
	}
	t0 := time.Now()
	err = d.final(p, compiled, pl)
	logf("final: %v, %d request(s) retried", time.Since(t0).Round(time.Millisecond), d.j.retries.Load())
	return err
}

// newSpec is the spec of the job at jobURL that runs p, cut as pl.
func newSpec(p *plan.Plan, jobURL string, pl *cut, opts Options) *Spec {
	spread := opts.Spread
	if spread <= 0 {
		most := 0
		for _, ph := range pl.phases {
			most = max(most, ph.Tasks)
		}
		spread = spreadFor(most)
	}
	return &Spec{Version: specVersion, Plan: p, Job: jobURL, Spread: min(spread, MaxSpread), Threads: opts.Threads, Phases: pl.phases, Out: opts.Out,
		PieceBytes: opts.PieceBytes, Broadcast: opts.Broadcast, Join: opts.Join, Memory: opts.Memory}
}

// newJobPrefix makes a fresh job prefix under base, or a temporary
// directory when base is empty (remove deletes it).
func newJobPrefix(base string) (url string, remove func(), err error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	id := "job-" + hex.EncodeToString(b[:])
	if base == "" {
		dir, err := os.MkdirTemp("", "sluice-")
		if err != nil {
			return "", nil, err
		}
		dir, _ = filepath.Abs(dir)
		return "file://" + filepath.ToSlash(dir) + "/" + id + "/", func() { os.RemoveAll(dir) }, nil
	}
	return strings.TrimSuffix(base, "/") + "/" + id + "/", func() {}, nil
}

type driver struct {
	ctx       context.Context
	opts      Options
	j         *job
	jobURL    string
	spec      *Spec
	specSum   string // the pin of spec's bytes the workers get
	exe       Executor
	manifests []*Manifest
	logf      func(string, ...any)
	events    *events // nil without Options.Events
	resumed   bool    // the job is Options.Resume's
	failed    int     // failed attempts of the running phase, as the executor counts them
	// again marks the phases run before whose committed tasks are not
	// run again: a reduce phase stopped by a lost input, and the phase
	// of the lost output.
	again map[int]bool
	// recomputed counts the times each task's committed output was made
	// again (by phase and task: each time under a new key).
	recomputed map[[2]int]int
}

// runPhase runs every task of phase pi with the executor, and writes
// the phase's manifest: the first done record the driver reads of each
// task is its committed output (any one is complete), whatever its other
// attempts write later.
func (d *driver) runPhase(pi int) (_ *Manifest, err error) {
	ph := d.spec.Phases[pi]
	var mu sync.Mutex
	committed := make([]*Output, ph.Tasks)
	var sums Progress
	commit := func(i int) (*Output, *Failure, error) {
		mu.Lock()
		defer mu.Unlock()
		if committed[i] != nil {
			return committed[i], nil, nil
		}
		out, failure, err := d.claims(pi, i)
		committed[i] = out
		if out != nil {
			sums.RowsIn += out.InRows
			sums.BytesIn += out.InBytes
			sums.RowsOut += out.Rows
			sums.BytesOut += out.Size
		}
		return out, failure, err
	}
	if d.events != nil {
		d.events.write(Event{Type: EventPhase, Time: time.Now(), Phase: pi, Kind: ph.Kind, Tasks: ph.Tasks})
		defer func() {
			end := time.Now()
			mu.Lock()
			outs := slices.Clone(committed)
			mu.Unlock()
			lines, aerr := d.attemptEvents(pi, outs, end)
			for _, ev := range lines {
				d.events.write(ev)
			}
			ev := Event{Type: EventPhaseEnd, Time: end, Phase: pi, Kind: ph.Kind, Tasks: ph.Tasks}
			switch {
			case err != nil:
				ev.Error = oneLine(err)
			case aerr != nil:
				ev.Error = "event log: the attempts' records: " + oneLine(aerr)
			}
			d.events.write(ev)
		}()
	}
	d.failed = 0
	r := PhaseRun{
		Job: jobID(d.jobURL), Spec: d.jobURL + specKey, SpecSum: d.specSum, Phase: pi, Kind: ph.Kind, Tasks: ph.Tasks,
		Workers: d.opts.Workers, Attempts: d.opts.Attempts, Log: d.logf, Once: ph.SideEffects,
		Done: func(ctx context.Context, i int) (bool, string, error) {
			out, failure, err := commit(i)
			if err != nil || out != nil || failure == nil {
				return out != nil, "", err
			}
			if le := d.lostInput(failure); le != nil {
				// Another attempt would find it lost too: stop the phase.
				return false, failure.Error, le
			}
			if failure.Permanent {
				// No attempt can succeed: the job fails at the first.
				te := &TaskError{Phase: ph.Kind, Task: i, Tasks: ph.Tasks, Worker: failure.Worker, Attempts: 1, Err: failure.Error}
				if ph.Kind == PhaseMap && i < len(ph.Pieces) {
					te.Piece = ph.Pieces[i].String()
				}
				return false, failure.Error, te
			}
			return false, failure.Error, nil
		},
		Progress: func(pr Progress) {
			mu.Lock()
			pr.Index = pi
			pr.RowsIn, pr.BytesIn, pr.RowsOut, pr.BytesOut = sums.RowsIn, sums.BytesIn, sums.RowsOut, sums.BytesOut
			mu.Unlock()
			d.failed = pr.Failed
			if d.opts.Progress != nil {
				d.opts.Progress(pr)
			}
		},
	}
	if d.events != nil {
		r.Watch = d.events.watch
	}
	if d.resumed || d.again[pi] {
		// Tasks whose outputs are committed (by a dead driver's workers,
		// or before a lost input stopped the phase) are not run again.
		r.Committed = make([]bool, ph.Tasks)
		for i := range ph.Tasks {
			out, _, err := commit(i)
			if err != nil {
				return nil, err
			}
			r.Committed[i] = out != nil
		}
	}
	if err := d.exe.RunPhase(d.ctx, r); err != nil {
		if te, ok := err.(*TaskError); ok {
			te.Phase, te.Tasks = ph.Kind, ph.Tasks
			if ph.Kind == PhaseMap && te.Task >= 0 && te.Task < len(ph.Pieces) {
				te.Piece = ph.Pieces[te.Task].String()
			}
			if _, failure, cerr := d.claims(pi, te.Task); cerr == nil && failure != nil {
				if le := d.lostInput(failure); le != nil {
					return nil, le
				}
				if te.Err == "" {
					te.Err = failure.Error
				}
			}
		}
		return nil, err
	}
	m := &Manifest{Phase: pi}
	for i := range ph.Tasks {
		out, failure, err := commit(i)
		if err != nil {
			return nil, err
		}
		if out == nil {
			te := &TaskError{Phase: ph.Kind, Task: i, Tasks: ph.Tasks, Worker: r.Name(), Attempts: 1,
				Err: "the worker ended well without committing its output"}
			if failure != nil {
				te.Err = failure.Error
			}
			return nil, te
		}
		m.Outputs = append(m.Outputs, *out)
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return nil, err
	}
	if err := d.j.put(d.ctx, manifestKey(pi), b); err != nil {
		return nil, err
	}
	return m, nil
}

// lostInput is the error of a failure that found a committed output of
// the phase before missing or corrupt, when that output is still the
// committed one (a failure recorded before it was made again is not)
// and it may be made again; nil otherwise.
func (d *driver) lostInput(f *Failure) *LostInputError {
	l := f.Lost
	if l == nil || l.Phase < 0 || l.Phase >= len(d.manifests) {
		return nil
	}
	outs := d.manifests[l.Phase].Outputs
	if l.Task < 0 || l.Task >= len(outs) || outs[l.Task].Key != l.Key || outs[l.Task].Dest || d.recomputed[[2]int{l.Phase, l.Task}] >= d.opts.Attempts {
		return nil
	}
	return &LostInputError{Lost: *l, Err: errors.New(f.Error)}
}

// recompute makes the committed output l names again: it forgets the
// done records that name it and the object, runs its task again (alone:
// the phase's other tasks stay committed) and writes the phase's
// manifest anew.
func (d *driver) recompute(l Lost) error {
	d.recomputed[[2]int{l.Phase, l.Task}]++
	ph := d.spec.Phases[l.Phase]
	d.logf("%s task %d: its committed output %s is lost or corrupt; running the task again", ph.Kind, l.Task, d.j.url(l.Key))
	del := func(key string) error {
		if err := d.j.do(d.ctx, func() error { return d.j.st.Delete(d.ctx, key) }); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}
	err := d.j.records(d.ctx, "done", l.Phase, l.Task, func(key string, b []byte) (bool, error) {
		if o, err := parseOutput(b, ph); err == nil && o.Key != l.Key {
			return true, nil
		}
		return true, del(key)
	})
	if err == nil {
		err = del(d.j.prefix + l.Key)
	}
	if err != nil {
		return err
	}
	d.again[l.Phase] = true
	m, err := d.runPhase(l.Phase)
	if err != nil {
		return err
	}
	d.manifests[l.Phase] = m
	return nil
}

// claims reads what the attempts of a task left in the store: the
// first done record (in key order; any one is a complete output) and
// the latest failure record.
func (d *driver) claims(pi, task int) (*Output, *Failure, error) {
	ph := d.spec.Phases[pi]
	var out *Output
	err := d.j.records(d.ctx, "done", pi, task, func(key string, b []byte) (bool, error) {
		o, err := parseOutput(b, ph)
		if err != nil {
			return false, fmt.Errorf("%s: %w", d.j.st.URL(key), err)
		}
		if o.Task == task {
			out = o
		}
		return out == nil, nil
	})
	if err != nil || out != nil {
		return out, nil, err
	}
	var fails []store.ObjectInfo
	if err := d.j.do(d.ctx, func() (err error) {
		fails, err = d.j.st.List(d.ctx, d.j.prefix+taskPrefix("fail", pi, task))
		return err
	}); err != nil || len(fails) == 0 {
		return nil, nil, err
	}
	sort.Slice(fails, func(a, b int) bool { return fails[a].ModTime.Before(fails[b].ModTime) })
	var b []byte
	if err := d.j.do(d.ctx, func() (err error) { b, err = d.j.st.ReadAll(d.ctx, fails[len(fails)-1].Key); return err }); err != nil {
		return nil, nil, err
	}
	var f Failure
	if json.Unmarshal(b, &f) != nil || f.Error == "" {
		f.Error = "a failure record that cannot be read"
	}
	return nil, &f, nil
}

// final runs the driver's part of the pipeline over the last phase's
// committed outputs, in task order.
func (d *driver) final(p *plan.Plan, compiled exec.Pipeline, pl *cut) error {
	last := len(d.spec.Phases) - 1
	m := d.manifests[last]
	stages := append([]exec.Stage(nil), compiled.Stages[pl.finalFrom:]...)
	eopts := exec.Options{Mem: d.opts.Mem, Workers: d.opts.Threads, Open: d.opts.Open}
	if pl.mergeBy != nil {
		keys := pl.mergeBy
		if pl.dropPosition {
			stages = append([]exec.Stage{exec.Drop(PositionColumn)}, stages...)
		}
		if pl.rebatch {
			stages = append([]exec.Stage{exec.Rebatch(PositionColumn, joinRowBits, joinTail)}, stages...)
		}
		ins := d.inputs(m)
		names := make([]string, len(ins))
		for i, in := range ins {
			names[i] = in.name
		}
		srcs, closeSrc := d.j.streams(d.ctx, ins, true, readBudget)
		err := exec.Run(d.ctx, exec.Pipeline{Source: exec.MergeSources(keys, names, srcs...), Stages: stages}, eopts)
		if rerr := closeSrc(); rerr != nil {
			return rerr
		}
		return err
	}
	if pl.finalAgg >= 0 {
		_, final, err := exec.CompileAgg(p.Stages[1+pl.finalAgg])
		if err != nil {
			return err
		}
		stages = append([]exec.Stage{final}, stages...)
	}
	srcs, closeSrc := d.j.streams(d.ctx, d.inputs(m), false, readBudget)
	err := exec.Run(d.ctx, exec.Pipeline{Source: exec.Concat(srcs...), Stages: stages}, eopts)
	if rerr := closeSrc(); rerr != nil {
		return rerr
	}
	return err
}

// inputs are the IPC streams a manifest lists, whole.
func (d *driver) inputs(m *Manifest) []input {
	ins := make([]input, len(m.Outputs))
	for i, o := range m.Outputs {
		ins[i] = input{key: d.j.prefix + o.Key, n: o.Size, size: o.Size, crc: o.CRC, name: d.j.url(o.Key)}
	}
	return ins
}

// cleanup deletes the job's objects and aborts its unfinished uploads:
// all of them, or with keep all but the spec, the manifests and the
// outputs they list.
func (d *driver) cleanup(ctx context.Context, keep bool) error {
	listed := map[string]bool{d.j.prefix + specKey: true, d.j.prefix + sigKey: true}
	for i, m := range d.manifests {
		listed[d.j.prefix+manifestKey(i)] = true
		for _, o := range m.Outputs {
			listed[d.j.prefix+o.Key] = true
		}
	}
	var infos []store.ObjectInfo
	if err := d.j.do(ctx, func() (err error) { infos, err = d.j.st.List(ctx, d.j.prefix); return err }); err != nil {
		if store.KindOf(err) == store.KindNotFound {
			return nil
		}
		return err
	}
	// Attempts stopped mid-write leave uploads; the job's prefix is the
	// job's alone.
	errs := []error{abortUploads(ctx, d.j.st, d.j.prefix, func(string) bool { return true })}
	for _, info := range infos {
		if keep && listed[info.Key] {
			continue
		}
		if err := d.j.do(ctx, func() error { return d.j.st.Delete(ctx, info.Key) }); err != nil && store.KindOf(err) != store.KindNotFound {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DestManifest is what a job with a destination writes there: its
// parts, in order.
type DestManifest struct {
	Job   string     `json:"job"`
	Parts []DestPart `json:"parts"`
}

// DestPart is one object of a destination.
type DestPart struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
}

// publish writes the destination's manifest.
func (d *driver) publish() error {
	st, prefix, err := openWith(d.ctx, d.opts.Open, d.spec.Out)
	if err != nil {
		return err
	}
	defer closeStore(d.opts.Open, st)
	m := DestManifest{Job: d.spec.id()}
	for _, o := range d.manifests[len(d.manifests)-1].Outputs {
		m.Parts = append(m.Parts, DestPart{Key: o.Key, Size: o.Size})
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return (&job{st: st, prefix: prefix}).put(d.ctx, destManifestKey, b)
}

// checkEmpty refuses a destination that holds objects: a prefix holds
// one job's parts and manifest, never two jobs' mixed.
func checkEmpty(ctx context.Context, open store.Opener, url string) error {
	st, prefix, err := openWith(ctx, open, url)
	if err != nil {
		return fmt.Errorf("destination: %w", err)
	}
	defer closeStore(open, st)
	infos, err := st.List(ctx, prefix)
	if err != nil && store.KindOf(err) != store.KindNotFound {
		return fmt.Errorf("destination: %w", err)
	}
	if len(infos) > 0 {
		return fmt.Errorf("%w: destination %s holds %d object(s) already (such as %s): give an empty prefix, or --overwrite to replace them", exec.ErrInvalid, url, len(infos), st.URL(infos[0].Key))
	}
	return nil
}

// abortUploads aborts the pending multipart uploads under prefix whose
// keys mine says are the job's: parts of outputs an attempt was writing
// when it was stopped or killed, which a store keeps (and bills) until
// aborted.
func abortUploads(ctx context.Context, st *store.Store, prefix string, mine func(key string) bool) error {
	if !st.HasUploads() {
		return nil
	}
	var ups []store.Upload
	if err := st.ListUploads(ctx, prefix, func(u store.Upload) error {
		if mine(u.Key) {
			ups = append(ups, u)
		}
		return nil
	}); err != nil {
		return err
	}
	var errs []error
	for _, u := range ups {
		if err := st.AbortUpload(ctx, u.Key, u.ID); err != nil && store.KindOf(err) != store.KindNotFound {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cleanupDest deletes what the job's attempts wrote at the destination
// and did not commit, or, when the job failed, all of it; with
// Overwrite, once it succeeded, also every part it did not write.
func (d *driver) cleanupDest(ctx context.Context, ok bool) error {
	st, prefix, err := openWith(ctx, d.opts.Open, d.spec.Out)
	if err != nil {
		return err
	}
	defer closeStore(d.opts.Open, st)
	committed := map[string]bool{}
	if ok {
		for _, o := range d.manifests[len(d.manifests)-1].Outputs {
			committed[prefix+o.Key] = true
		}
	}
	infos, err := st.List(ctx, prefix+"part-")
	if err != nil {
		if store.KindOf(err) == store.KindNotFound {
			return nil
		}
		return err
	}
	mine := func(key string) bool { return strings.Contains(key, "."+d.spec.id()+".") }
	errs := []error{abortUploads(ctx, st, prefix+"part-", mine)}
	for _, info := range infos {
		if committed[info.Key] || !mine(info.Key) && !(ok && d.opts.Overwrite) {
			continue
		}
		if err := st.Delete(ctx, info.Key); err != nil && store.KindOf(err) != store.KindNotFound {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
