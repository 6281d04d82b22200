package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/store"
)

// ExecLauncher is a Launcher over a fanout.Executor: each run's workers
// are one phase of the executor, as a fanned-out job's tasks are
// (fanout.Local's processes, a cluster's array job or Indexed Job), as
// many tasks as workers, all at once and each once (a benchmark worker
// run twice would measure twice), each told its index in the
// environment; the object store, not the executor, holds what they
// measured.
type ExecLauncher struct {
	// Exe starts the workers; its command is the worker's before Args.
	// A fanout.Local should have a Grace, so that the workers it stops
	// (after a failure or when ctx ends) delete what they wrote.
	Exe fanout.Executor
	// Args are the workers' arguments. Every worker of a run gets the
	// same (those of the run's first worker): they must not depend on
	// w.Index, which each worker learns from its environment.
	Args func(w WorkerSpec) []string
	// Records reads what worker w recorded, once it has ended, also when
	// it failed part way.
	Records func(w WorkerSpec) ([]Record, error)
	// Job names the launcher's phases (they are Job-p<run>), as
	// fanout.PhaseRun.Job does; default bench-<random hex>.
	Job string
	// Progress, when set, gets the executor's counts of a run's workers
	// as they start and end, Index the run's number.
	Progress func(fanout.Progress)

	mu  sync.Mutex
	seq int
}

// Launch runs the workers ws of one run as one phase of the executor and
// reads back each one's records, also after a failure. The first worker
// to fail ends the phase, the executor stopping the others, and the
// error names it: its index, the executor's name for it and the last
// line it logged.
func (l *ExecLauncher) Launch(ctx context.Context, ws []WorkerSpec) ([][]Record, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	l.mu.Lock()
	if l.Job == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		l.Job = "bench-" + hex.EncodeToString(b[:])
	}
	run := l.seq
	l.seq++
	l.mu.Unlock()
	k := len(ws)
	pr := fanout.PhaseRun{Job: l.Job, Phase: run, Kind: "bench", Tasks: k, Workers: k, Attempts: 1, Argv: l.Args(ws[0])}
	if l.Progress != nil {
		pr.Progress = func(p fanout.Progress) {
			p.Index = run
			l.Progress(p)
		}
	}
	runErr := l.Exe.RunPhase(ctx, pr)
	if runErr != nil {
		var te *fanout.TaskError
		switch {
		case ctx.Err() != nil:
			runErr = context.Cause(ctx)
		case errors.As(runErr, &te):
			msg := te.Err
			if _, last, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "exit status") {
				msg = last // the worker's own last line says more than its status
			}
			runErr = fmt.Errorf("worker %d of %d (%s): %s", te.Task, k, te.Worker, msg)
		default:
			runErr = fmt.Errorf("workers of a run of %d: %w", k, runErr)
		}
	}
	recs := make([][]Record, k)
	for i, w := range ws {
		r, err := l.Records(w)
		recs[i] = r
		if err != nil && runErr == nil {
			runErr = fmt.Errorf("worker %d of %d: %w", w.Index, k, err)
		}
	}
	return recs, runErr
}

// WorkerGrace bounds how long a stopped worker gets to delete what it
// wrote before it is killed (Run's own cleanup is bounded at 2 minutes).
const WorkerGrace = 150 * time.Second

// ErrUnreachable is NewExecLauncher's refusal of a store that its
// executor's workers cannot reach.
var ErrUnreachable = errors.New("the workers need a store they reach")

// NewExecLauncher is an ExecLauncher whose workers run exe's command with
// args(w, records), records being the URL under which each leaves its
// records (RunWorkerAt) and the driver reads them: the run's prefix in the
// store at storeURL, or, for a mem:// store, which lives in each process,
// a temporary directory that cleanup removes (only a local executor's
// workers see it). open opens the records' stores, without a link model:
// they are bookkeeping, not what is measured; each store it opens is
// closed after use. A fanout.Local gets
// WorkerGrace, so its stopped workers delete what they wrote, and no
// Limit, as a run's workers must all run at once.
func NewExecLauncher(exe fanout.Executor, storeURL string, open store.Opener, args func(w WorkerSpec, records string) []string) (l *ExecLauncher, cleanup func(), err error) {
	records := func(w WorkerSpec) string { return w.URL + w.Run + "records/" }
	cleanup = func() {}
	local, isLocal := exe.(*fanout.Local)
	if strings.HasPrefix(storeURL, "mem://") {
		if !isLocal {
			return nil, nil, fmt.Errorf("%w; %s lives in each process", ErrUnreachable, storeURL)
		}
		dir, err := os.MkdirTemp("", "sluice-bench-workers-")
		if err != nil {
			return nil, nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		root := "file://" + filepath.ToSlash(dir) + "/"
		records = func(w WorkerSpec) string { return root + w.Run + "records/" }
	}
	if isLocal {
		local.Grace = WorkerGrace
		local.Limit = -1
	}
	return &ExecLauncher{
		Exe:  exe,
		Args: func(w WorkerSpec) []string { return args(w, records(w)) },
		Records: func(w WorkerSpec) ([]Record, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rs, prefix, err := open(ctx, records(w))
			if err != nil {
				return nil, err
			}
			defer rs.Close()
			return WorkerRecords(ctx, rs, prefix, w.Index)
		},
	}, cleanup, nil
}

// RunWorkerAt is RunWorker in a worker process that NewExecLauncher's
// executor started: its index from its environment, as every executor
// gives it, its records left under the URL records, opened by open.
func RunWorkerAt(ctx context.Context, st *store.Store, run string, cfg Config, records string, open store.Opener) error {
	index, err := fanout.TaskIndexFromEnv()
	if err != nil {
		return fmt.Errorf("bench worker: %w", err)
	}
	rs, prefix, err := open(ctx, records)
	if err != nil {
		return err
	}
	defer rs.Close()
	return RunWorker(ctx, st, run, index, cfg, rs, prefix)
}
