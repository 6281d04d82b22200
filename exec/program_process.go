package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"syscall"
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
	inOnce, outOnce sync.Once
	tail            *stderrTail
	exited          chan struct{} // closed once the program is reaped
	logged          chan struct{} // closed once its stderr is all passed on
	err             error         // Wait's, set before exited is closed

	mu     sync.Mutex
	reason killReason // the first reason it was killed for
}

func startProgram(ps *programStage) (*process, error) {
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
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("%s: start: %w", label, err)
	}
	// The program holds its ends now; the run keeps its own.
	inR.Close()
	outW.Close()
	errW.Close()
	pr := &process{ps: ps, label: label, cmd: cmd, stdin: inW, stdout: outR,
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
