package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/sluice-data/sluice/fanout"
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
