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

// ExecLauncher is a Launcher over a fanout.Executor: workers are started
// the way a fanned-out job's tasks are (fanout.Local's processes one by
// one; a cluster's array job or Indexed Job, a run's workers together,
// as a phase's tasks), each told its index in the environment, and the
// object store, not the executor, holds what they measured. Close it
// once the run is over.
type ExecLauncher struct {
	// Exe starts the workers; its command is the worker's before Args.
	Exe fanout.Executor
	// Args are worker w's arguments. Through an executor that runs whole
	// phases every worker of a run gets the same (those of the run's
	// first worker): they must not depend on w.Index, which each worker
	// learns from its environment.
	Args func(w WorkerSpec) []string
	// Records reads what worker w recorded, once it has ended, also when
	// it failed part way.
	Records func(w WorkerSpec) ([]Record, error)
	// Job names the launcher's array jobs (they are Job-p<run>), as
	// fanout.PhaseRun.Job does; default bench-<random hex>.
	Job string

	mu      sync.Mutex
	seq     int
	waiting map[string]chan fanout.Exit
	done    chan struct{}
	wg      sync.WaitGroup
}

// starter is an executor that starts workers one by one (fanout.Local).
type starter interface {
	Start(ctx context.Context, t fanout.Task) error
	Exits() <-chan fanout.Exit
	Stop() error
}

// Launch starts worker w and waits for its end; when ctx ends first it
// stops every worker of the executor (which interrupts them, so that
// they clean up, when it is a fanout.Local with a Grace). Only an
// executor that starts workers one by one launches one alone; the
// others run a run's workers together (LaunchGroup).
func (l *ExecLauncher) Launch(ctx context.Context, w WorkerSpec) ([]Record, error) {
	exe, ok := l.Exe.(starter)
	if !ok {
		return nil, fmt.Errorf("worker %d of %d: the %T executor starts a run's workers together, not one alone", w.Index, w.Count, l.Exe)
	}
	l.mu.Lock()
	if l.waiting == nil {
		l.waiting = map[string]chan fanout.Exit{}
		l.done = make(chan struct{})
		l.wg.Add(1)
		go l.dispatch(exe, l.done)
	}
	l.seq++
	label := fmt.Sprintf("b%d", l.seq)
	ch := make(chan fanout.Exit, 1)
	l.waiting[label] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.waiting, label)
		l.mu.Unlock()
	}()
	var runErr error
	if err := exe.Start(ctx, fanout.Task{Index: w.Index, Attempt: label, Args: l.Args(w)}); err != nil {
		return nil, fmt.Errorf("worker %d of %d: %w", w.Index, w.Count, err)
	}
	select {
	case ex := <-ch:
		runErr = ex.Err
	case <-ctx.Done():
		exe.Stop()
		runErr = context.Cause(ctx)
	}
	recs, err := l.Records(w)
	if err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		msg := runErr.Error()
		if _, last, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "exit status") {
			msg = last // the worker's own last line says more than its status
		}
		return recs, fmt.Errorf("worker %d of %d: %s", w.Index, w.Count, msg)
	}
	return recs, nil
}

// LaunchGroup runs the workers of a run as one phase of the executor,
// each once (a benchmark worker run twice would measure twice), as many
// at once as there are workers; through an executor that starts workers
// one by one it launches each worker, as Launch does, all at once.
func (l *ExecLauncher) LaunchGroup(ctx context.Context, ws []WorkerSpec) ([][]Record, error) {
	if _, ok := l.Exe.(starter); ok {
		return launchEach(ctx, l, ws)
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
	runErr := l.Exe.RunPhase(ctx, fanout.PhaseRun{Job: l.Job, Phase: run, Kind: "bench", Tasks: k, Workers: k, Attempts: 1, Argv: l.Args(ws[0])})
	if runErr != nil {
		var te *fanout.TaskError
		switch {
		case ctx.Err() != nil:
			runErr = context.Cause(ctx)
		case errors.As(runErr, &te):
			runErr = fmt.Errorf("worker %d of %d (%s): %s", te.Task, k, te.Worker, te.Err)
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

// dispatch hands each worker's exit to the Launch waiting for it.
func (l *ExecLauncher) dispatch(exe starter, done <-chan struct{}) {
	defer l.wg.Done()
	for {
		select {
		case ex := <-exe.Exits():
			l.mu.Lock()
			ch := l.waiting[ex.Task.Attempt]
			l.mu.Unlock()
			if ch != nil {
				ch <- ex
			}
		case <-done:
			return
		}
	}
}

// Close stops every worker still running and what Launch started to
// watch them.
func (l *ExecLauncher) Close() error {
	var err error
	if exe, ok := l.Exe.(starter); ok {
		err = exe.Stop()
	}
	l.mu.Lock()
	if l.done != nil {
		close(l.done)
		l.done, l.waiting = nil, nil
	}
	l.mu.Unlock()
	l.wg.Wait()
	return err
}
