package fanout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Executor starts, watches and stops workers; it knows nothing of what
// they do. Which task is done is read from the object store, never from
// the executor: a worker that exits 0 without a done record has not
// done its task, and one killed after writing it has.
type Executor interface {
	// Start starts one worker for the task: `sluice worker SPEC --phase
	// P` with the task's index in JOB_COMPLETION_INDEX (as a Kubernetes
	// Indexed Job sets it) and the attempt in SLUICE_ATTEMPT.
	Start(ctx context.Context, t Task) error
	// Exits reports every started worker's end, once.
	Exits() <-chan Exit
	// Stop kills every worker still running and returns once they are
	// gone; their exits are not reported.
	Stop() error
}

// Exit is how a worker ended.
type Exit struct {
	Task   Task
	Worker string // the executor's name for it, such as a pid
	Err    error  // nil for exit status 0; with the last line of its stderr
}

// Local runs workers as processes of this machine.
type Local struct {
	// Command is the worker's command before its arguments; nil means
	// this executable with the argument "worker".
	Command []string
	// Env is added to the workers' environment.
	Env []string
	// Grace, when above zero, makes Stop interrupt the workers first (as
	// Ctrl-C would, so they can delete what they wrote) and kill only
	// those still running after it.
	Grace time.Duration

	mu       sync.Mutex
	running  map[*exec.Cmd]bool
	stopping bool
	wg       sync.WaitGroup
	exits    chan Exit
}

// NewLocal returns a local executor; its workers run command (nil: this
// executable's worker command).
func NewLocal(command []string) *Local {
	return &Local{Command: command, running: map[*exec.Cmd]bool{}, exits: make(chan Exit, 64)}
}

func (l *Local) Exits() <-chan Exit { return l.exits }

func (l *Local) Start(ctx context.Context, t Task) error {
	argv := l.Command
	if len(argv) == 0 {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		argv = []string{self, "worker"}
	}
	args := append([]string(nil), argv[1:]...)
	if t.Args != nil {
		args = append(args, t.Args...)
	} else {
		args = append(args, t.Spec, "--phase", strconv.Itoa(t.Phase))
	}
	cmd := exec.Command(argv[0], args...)
	cmd.Env = append(append(os.Environ(), l.Env...),
		"JOB_COMPLETION_INDEX="+strconv.Itoa(t.Index), "SLUICE_ATTEMPT="+t.Attempt)
	tail := &tailWriter{}
	cmd.Stderr = tail
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopping {
		return errors.New("executor is stopping")
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
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
			l.exits <- Exit{Task: t, Worker: fmt.Sprintf("pid %d", cmd.Process.Pid), Err: err}
		}
	}()
	return nil
}

// Stop kills the running workers and waits for them; the executor may
// start workers again afterwards.
func (l *Local) Stop() error {
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
