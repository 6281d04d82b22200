package fanout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluice-data/sluice/internal/fanouthook"
)

// localLimit is how many workers a Local runs at once by default: 4 a
// core.
func localLimit() int { return 4 * runtime.NumCPU() }

// hostName names this machine in the attempts RunPhase reports, as a
// worker names itself in its records ("host pid N", RunTask).
var hostName = sync.OnceValue(func() string { h, _ := os.Hostname(); return h })

// exit is how a worker that Local started ended.
type exit struct {
	Task   Task
	Worker string // the executor's name for it, such as a pid
	Err    error  // nil for exit status 0; with the last line of its stderr
}

// Local runs workers as processes of this machine. RunPhase starts a
// phase's tasks one by one, at most Workers at once, starts a failed or
// killed one again, and gives a straggler a duplicate (unless
// PhaseRun.Once). With Attempts 1
// and Workers equal to Tasks it starts every task at once and each once,
// and the first failure stops the others: how sluice bench --workers runs
// its workers (PhaseRun.Argv).
type Local struct {
	// Command is the worker's command before its arguments; nil means
	// this executable with the argument "worker".
	Command []string
	// Env is added to the workers' environment.
	Env []string
	// Grace, when above zero, makes RunPhase stop the workers it leaves
	// running (on a failure or when ctx ends) by interrupting them first,
	// as Ctrl-C would, so they can delete what they wrote, and killing
	// only those still running after it.
	Grace time.Duration
	// Limit caps the workers running at once, whatever PhaseRun.Workers
	// asks: processes beyond a few per core only slow each other (1,000
	// asked for on 2 cores once ran 86 at a load of 37). Zero means
	// 4 a core; negative, no cap (sluice bench --workers, whose workers
	// must all run at once).
	Limit int

	mu       sync.Mutex
	running  map[*exec.Cmd]bool
	stopping bool
	wg       sync.WaitGroup
	exits    chan exit
}

// NewLocal returns a local executor; its workers run command (nil: this
// executable's worker command).
func NewLocal(command []string) *Local {
	return &Local{Command: command, running: map[*exec.Cmd]bool{}, exits: make(chan exit, 64)}
}

// start starts one worker for the task: `sluice worker SPEC --phase P`
// (or the task's Args) with the task's index in JOB_COMPLETION_INDEX (as
// a Kubernetes Indexed Job sets it) and the attempt in SLUICE_ATTEMPT. Its
// end arrives on l.exits, unless stop stopped it.
func (l *Local) start(t Task) (worker string, err error) {
	argv := l.Command
	if len(argv) == 0 {
		self, err := os.Executable()
		if err != nil {
			return "", err
		}
		argv = []string{self, "worker"}
	}
	args := append([]string(nil), argv[1:]...)
	if t.Args != nil {
		args = append(args, t.Args...)
	} else {
		args = append(args, PhaseRun{Spec: t.Spec, Phase: t.Phase, SpecSum: t.SpecSum}.Args()...)
	}
	cmd := exec.Command(argv[0], args...)
	cmd.Env = append(append(os.Environ(), l.Env...),
		"JOB_COMPLETION_INDEX="+strconv.Itoa(t.Index), "SLUICE_ATTEMPT="+t.Attempt)
	tail := &tailWriter{}
	cmd.Stderr = tail
	stopWithParent(cmd)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping {
		return "", errors.New("executor is stopping")
	}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start worker: %w", err)
	}
	worker = fmt.Sprintf("pid %d", cmd.Process.Pid)
	l.running[cmd] = true
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		err := cmd.Wait()
		if err != nil {
			if line := tail.last(); line != "" {
				err = fmt.Errorf("%w: %s", err, line)
			}
		}
		l.mu.Lock()
		delete(l.running, cmd)
		stopping := l.stopping
		l.mu.Unlock()
		if !stopping {
			l.exits <- exit{Task: t, Worker: worker, Err: err}
		}
	}()
	return worker, nil
}

// stop kills the running workers (interrupts them first, with a Grace)
// and waits for them; their exits are not reported. The executor may
// start workers again afterwards.
func (l *Local) stop() error {
	l.mu.Lock()
	l.stopping = true
	for cmd := range l.running {
		if l.Grace > 0 {
			cmd.Process.Signal(os.Interrupt)
		} else {
			cmd.Process.Kill()
		}
	}
	l.mu.Unlock()
	if l.Grace > 0 {
		timer := time.AfterFunc(l.Grace, func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			for cmd := range l.running {
				cmd.Process.Kill()
			}
		})
		defer timer.Stop()
	}
	// Exits already queued are stale now; drain while waiting so no
	// waiter blocks on a full channel.
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
wait:
	for {
		select {
		case <-l.exits:
		case <-done:
			break wait
		}
	}
	for len(l.exits) > 0 {
		<-l.exits
	}
	l.mu.Lock()
	l.stopping = false
	l.mu.Unlock()
	return nil
}

type taskState struct {
	committed bool
	running   int
	started   int
	failures  int
	lastErr   string
	lastOn    string
	since     time.Time // the running attempt's start
}

// stragglerAfter is how long a task may run, against the median of those
// done, before it gets a duplicate attempt.
func stragglerAfter(took []time.Duration) time.Duration {
	if len(took) == 0 {
		return time.Hour
	}
	s := append([]time.Duration(nil), took...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	return max(2*s[len(s)/2], 500*time.Millisecond)
}

// RunPhase runs every task of the phase until each is done: failed
// attempts are retried up to Attempts, and once nothing is left to
// start, tasks still running get a duplicate attempt while they have
// attempts left (the driver commits the first done record). It stops the
// workers still running before it returns, on a failure or when ctx
// ends (see Grace).
func (l *Local) RunPhase(ctx context.Context, r PhaseRun) error {
	switch {
	case l.Limit == 0:
		r.Workers = min(r.Workers, localLimit())
	case l.Limit > 0:
		r.Workers = min(r.Workers, l.Limit)
	}
	tasks := make([]taskState, r.Tasks)
	duplicate := fanouthook.From(ctx).DuplicateAll && !r.Once
	var queue []int
	done := 0
	for i := range r.Tasks {
		if i < len(r.Committed) && r.Committed[i] {
			tasks[i].committed = true
			done++
			continue
		}
		queue = append(queue, i)
		if duplicate {
			queue = append(queue, i)
		}
	}
	logf := r.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	active, failed := 0, 0
	var took []time.Duration
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	progress := func() {
		if r.Progress != nil {
			r.Progress(Progress{Phase: r.Kind, Tasks: r.Tasks, Done: done, Running: active, Failed: failed})
		}
	}
	defer l.stop()
	launch := func(i int) error {
		ts := &tasks[i]
		ts.started++
		ts.running++
		if ts.running == 1 {
			ts.since = time.Now()
		}
		active++
		label := fmt.Sprintf("a%d", ts.started)
		worker, err := l.start(Task{Spec: r.Spec, SpecSum: r.SpecSum, Phase: r.Phase, Index: i, Attempt: label, Args: r.Argv})
		if err == nil && r.Watch != nil {
			r.Watch(AttemptEvent{Task: i, Attempt: label, Worker: hostName() + " " + worker, Start: time.Now()})
		}
		return err
	}
	for done < r.Tasks {
		for active < r.Workers && len(queue) > 0 {
			i := queue[0]
			queue = queue[1:]
			if tasks[i].committed {
				continue
			}
			if err := launch(i); err != nil {
				return err
			}
		}
		if len(queue) == 0 && active < r.Workers && !r.Once {
			// Stragglers: nothing is left to start and a slot is free; a
			// task running alone for much longer than most took gets a
			// second attempt.
			slow := stragglerAfter(took)
			for i := range tasks {
				ts := &tasks[i]
				if active >= r.Workers {
					break
				}
				if !ts.committed && ts.running == 1 && ts.started < r.Attempts && ts.started == ts.failures+1 && time.Since(ts.since) > slow {
					if err := launch(i); err != nil {
						return err
					}
					logf("%s task %d: duplicate attempt a%d of a straggler running for %v", r.Kind, i, ts.started, time.Since(ts.since).Round(time.Millisecond))
				}
			}
		}
		progress()
		var ex exit
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
			continue
		case ex = <-l.exits:
		}
		if ex.Task.Phase != r.Phase {
			continue
		}
		if r.Watch != nil {
			r.Watch(AttemptEvent{Task: ex.Task.Index, Attempt: ex.Task.Attempt, Worker: hostName() + " " + ex.Worker, End: time.Now(), Err: ex.Err})
		}
		active--
		ts := &tasks[ex.Task.Index]
		ts.running--
		if ts.committed {
			continue
		}
		ok, failure := ex.Err == nil, ""
		if r.Done != nil {
			var err error
			if ok, failure, err = r.Done(ctx, ex.Task.Index); err != nil {
				return err
			}
		}
		if ok {
			ts.committed = true
			took = append(took, time.Since(ts.since))
			done++
			continue
		}
		ts.failures++
		failed++
		ts.lastOn = ex.Worker
		switch {
		case failure != "":
			ts.lastErr = failure
		case ex.Err != nil:
			ts.lastErr = ex.Err.Error()
		default:
			ts.lastErr = "the worker exited without committing its output"
		}
		if ts.failures >= r.Attempts {
			return &TaskError{Phase: r.Kind, Task: ex.Task.Index, Tasks: r.Tasks, Worker: ts.lastOn, Attempts: ts.failures, Err: ts.lastErr}
		}
		if ts.running == 0 {
			queue = append(queue, ex.Task.Index)
			logf("%s task %d: attempt %s on worker %s failed (%s); retrying", r.Kind, ex.Task.Index, ex.Task.Attempt, ex.Worker, ts.lastErr)
		}
	}
	progress()
	return l.stop()
}

// tailWriter keeps the last few KiB a worker writes to stderr.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-4096:]...)
	}
	return len(p), nil
}

func (t *tailWriter) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return strings.TrimPrefix(lines[len(lines)-1], "sluice: ")
}
