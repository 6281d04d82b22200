package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/sluice-data/sluice/format"
)

// killReason says why the run killed its program.
type killReason int

const (
	killNone killReason = iota
	killTimeout
	killCancel
	killUpstream
	killDownstream
	killDone
)

// process is a running program and what the run knows of it.
type process struct {
	ps              *programStage
	label           string
	cmd             *osexec.Cmd
	stdin           *os.File // the run's ends of the program's pipes
	stdout          *os.File
	ready           *os.File // the program says it listens here; nil: no wait
	inOnce, outOnce sync.Once
	tail            *stderrTail
	exited          chan struct{} // closed once the program is reaped
	logged          chan struct{} // closed once its stderr is all passed on
	err             error         // Wait's, set before exited is closed

	mu     sync.Mutex
	reason killReason // the first reason it was killed for
}

// ReadyEnv names the descriptor on which a sluice started as an exec
// stage's program says that it listens for a hand-off of its input
// (Options.Listening): a byte, or its closing.
const ReadyEnv = "SLUICE_PIPE_READY"

// ReadyFromEnv is the other end of ReadyEnv, for a sluice process that
// may have been started as a program: the function it returns says, once,
// that the process's input is ready for a hand-off (its Options.Listening);
// the parent writes only then, so the hand-off is not lost to the race of
// the process's start. Without such a parent it does nothing. It takes
// the variable out of the environment, so that the programs this process
// starts in turn do not inherit it.
func ReadyFromEnv() func() {
	v, ok := os.LookupEnv(ReadyEnv)
	if !ok {
		return func() {}
	}
	os.Unsetenv(ReadyEnv)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return func() {}
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "pipe-ready")
	return sync.OnceFunc(func() {
		f.Write([]byte{1})
		f.Close()
	})
}

func startProgram(ps *programStage, handOff bool) (*process, error) {
	label := ps.label()
	path, err := osexec.LookPath(ps.o.Argv[0])
	if err != nil {
		return nil, invalidf("%s: program %q not found (in PATH, or not executable): the program must exist where the stage runs", label, ps.o.Argv[0])
	}
	stderr := ps.o.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	cmd := &osexec.Cmd{
		Path: path, Args: ps.o.Argv,
		Env:   append(os.Environ(), ps.o.Env...),
		Stdin: inR, Stdout: outW, Stderr: errW,
		SysProcAttr: groupAttr(),
	}
	// A writer hands off only to a reader listening at its first
	// message, and a child starts later than this process writes: when
	// the program is this very sluice (it knows the signal), its input
	// waits until it says it listens.
	var readyR, readyW *os.File
	if handOff && ps.format(ps.o.In) == format.IPCStream && sameExecutable(path) {
		if readyR, readyW, err = pipe(); err != nil {
			closeAll()
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		cmd.ExtraFiles = []*os.File{readyW}
		cmd.Env = append(cmd.Env, ReadyEnv+"=3")
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("%s: start: %w", label, err)
	}
	// The program holds its ends now; the run keeps its own.
	inR.Close()
	outW.Close()
	errW.Close()
	if readyW != nil {
		readyW.Close()
	}
	pr := &process{ps: ps, label: label, cmd: cmd, stdin: inW, stdout: outR, ready: readyR,
		tail: &stderrTail{}, exited: make(chan struct{}), logged: make(chan struct{})}
	go func() {
		defer close(pr.logged)
		defer errR.Close()
		pr.tail.pump(errR, stderr, "["+label+"] ")
	}()
	go func() {
		pr.err = cmd.Wait()
		// What the program left behind in its group would hold its
		// pipes open (and the run waiting on them): it goes with it.
		killGroup(cmd.Process.Pid)
		close(pr.exited)
	}()
	return pr, nil
}

// kill kills the program's process group, remembering the first reason.
func (pr *process) kill(why killReason) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	select {
	case <-pr.exited:
		return
	default:
	}
	if pr.reason == killNone {
		pr.reason = why
	}
	killGroup(pr.cmd.Process.Pid)
}

// awaitReady waits until the program listens for a hand-off of its
// input: a byte on its ready pipe, or the pipe closed (the program exited,
// or reads its input otherwise).
func (pr *process) awaitReady() {
	if pr.ready == nil {
		return
	}
	var b [1]byte
	pr.ready.Read(b[:])
	pr.ready.Close()
	pr.ready = nil
}

// sameExecutable says path is this process's executable.
func sameExecutable(path string) bool {
	self, err := os.Executable()
	if err != nil {
		return false
	}
	a, errA := os.Stat(self)
	b, errB := os.Stat(path)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

func (pr *process) closeStdin()  { pr.inOnce.Do(func() { pr.stdin.Close() }) }
func (pr *process) closeStdout() { pr.outOnce.Do(func() { pr.stdout.Close() }) }

// verdict is the run's error once both halves and the program are done.
// The program's own failure comes first: what the halves saw of it (a
// closed pipe, a cut stream) follows from it.
func (pr *process) verdict(ctx context.Context, upErr, downErr error) error {
	pr.mu.Lock()
	reason := pr.reason
	pr.mu.Unlock()
	var ee *osexec.ExitError
	exitErr := errors.As(pr.err, &ee)
	switch {
	case reason == killCancel || ctx.Err() != nil:
		return context.Cause(ctx)
	case reason == killTimeout && exitErr && killedBy(ee, syscall.SIGKILL):
		// (A program that ended as its time ran out was not killed.)
		return fmt.Errorf("%s: killed: it ran past --timeout %v%s", pr.label, pr.ps.o.Timeout, pr.tail.text())
	case exitErr && ee.ExitCode() > 0:
		return fmt.Errorf("%s: %v%s", pr.label, ee, pr.tail.text())
	case exitErr && (reason == killNone || !killedBy(ee, syscall.SIGKILL) && !killedBy(ee, syscall.SIGPIPE)):
		// A signal the run did not send: once it killed the program,
		// SIGKILL is its own and SIGPIPE its closing the output.
		return fmt.Errorf("%s: %v%s", pr.label, ee, pr.tail.text())
	case pr.err != nil && !exitErr:
		return fmt.Errorf("%s: %w", pr.label, pr.err)
	case upErr != nil && !errors.Is(upErr, context.Canceled):
		// Canceled, ctx being alive, is the run stopping the stages
		// before once those after were done.
		return upErr
	case downErr != nil:
		return downErr
	}
	return nil
}

// stderrTail passes a program's standard error on, line by line with a
// prefix, and keeps its last lines for the error that ends a run.
type stderrTail struct {
	mu    sync.Mutex
	lines []string
}

// tailLines is how many last lines of stderr a failure quotes, each cut
// to tailWidth bytes.
const (
	tailLines = 3
	tailWidth = 200
)

func (t *stderrTail) pump(r io.Reader, w io.Writer, prefix string) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text := strings.TrimRight(string(line), "\r\n")
			// One write a line, so lines of stages at once do not mix.
			io.WriteString(w, prefix+text+"\n")
			t.add(text)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

func (t *stderrTail) add(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	if len(line) > tailWidth {
		line = line[:tailWidth] + "..."
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

// text is the last lines as the end of a one-line error.
func (t *stderrTail) text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return " (nothing on stderr)"
	}
	return "; stderr: " + strings.Join(t.lines, " | ")
}
