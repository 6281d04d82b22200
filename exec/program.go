package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/format"
)

// ProgramOptions configure Program.
type ProgramOptions struct {
	// Argv is the program, found in PATH, and its arguments.
	Argv []string
	// In and Out are the formats of its input and output: format.IPCStream
	// (the zero Format means it too), format.CSV or format.JSONLines.
	In, Out format.Format
	// Schema, when set, is the output's schema: what an Arrow output must
	// have, the types CSV is read with, JSON lines' columns.
	Schema *arrow.Schema
	// Timeout, when above zero, kills the program past it.
	Timeout time.Duration
	// Env is added to the program's environment.
	Env []string
	// Stderr gets the program's standard error, each line prefixed with
	// [exec NAME]; nil means os.Stderr.
	Stderr io.Writer
}

// Program is a stage that runs a program over its input: the batches in
// dataset order to the program's standard input, its standard output
// read back as the stage's output, both at once. One process runs per
// Run. Its success is exit status 0 and, for an Arrow output, the
// stream's end-of-stream marker; anything else fails the run with one
// line naming the program, its status and its last lines of standard
// error. A program that stops reading early (head) is no failure; when
// the stages after it want no more, it is killed. Its process group is
// killed when the run fails or ctx ends.
//
// The stages after a program are bound to its output's schema when the
// program has written it (or to Schema), so their mistakes are found then.
func Program(o ProgramOptions) Stage { return &programStage{o: o} }

type programStage struct{ o ProgramOptions }

func (s *programStage) Name() string { return "exec" }

func (s *programStage) bind(*env, *arrow.Schema) (*bound, error) {
	// Run splits a pipeline at its programs before binding.
	return nil, invalidf("exec: a program runs only in a pipeline given to Run")
}

// label names the program in messages and its stderr's prefix: exec and
// the command's base name.
func (s *programStage) label() string {
	name := s.o.Argv[0]
	if i := strings.LastIndexByte(name, '/'); i >= 0 && i < len(name)-1 {
		name = name[i+1:]
	}
	return "exec " + name
}

func (s *programStage) format(f format.Format) format.Format {
	if f == format.Unknown {
		return format.IPCStream
	}
	return f
}

// runProgram runs p, whose stage at is a program: the stages before it
// with the program's input as their sink, and the program's output as
// the source of the stages after it, all at once.
func runProgram(ctx context.Context, p Pipeline, at int, opts Options) error {
	ps := p.Stages[at].(*programStage)
	if at == len(p.Stages)-1 {
		return invalidf("pipeline: the last stage (exec) writes a stream: end with a sink (write, show, to-csv, partition)")
	}
	if len(ps.o.Argv) == 0 || ps.o.Argv[0] == "" {
		return invalidf("exec: no program given")
	}
	for _, f := range []format.Format{ps.format(ps.o.In), ps.format(ps.o.Out)} {
		switch f {
		case format.IPCStream, format.CSV, format.JSONLines:
		default:
			return invalidf("exec: a program reads and writes arrows, csv or jsonl, not %s", f)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	pr, err := startProgram(ps, opts.HandOff)
	if err != nil {
		return err
	}
	stopTimer := func() bool { return true }
	if ps.o.Timeout > 0 {
		t := time.AfterFunc(ps.o.Timeout, func() { pr.kill(killTimeout) })
		stopTimer = t.Stop
	}
	stopCancel := context.AfterFunc(ctx, func() { pr.kill(killCancel) })
	// Whatever happens, nothing of the program outlives the run.
	defer func() {
		stopTimer()
		stopCancel()
		pr.kill(killDone)
		<-pr.exited
		<-pr.logged
		if pr.ready != nil {
			pr.ready.Close()
		}
	}()

	in := &programInput{ps: ps, pr: pr}
	// The program's input is written once its output is listened for, so
	// that a sluice program finds the stage listening when it hands off.
	listening := make(chan struct{})
	listened := sync.OnceFunc(func() { close(listening) })
	out := &programOutput{ps: ps, pr: pr, listened: listened}
	// The two halves share the caller's ctx only: each ends on its own,
	// and the program's fate decides which error is the run's.
	var upErr, downErr error
	// Stages after that want no more stop the stages before too.
	uctx, stopUp := context.WithCancel(ctx)
	defer stopUp()
	var g errgroup.Group
	g.Go(func() error {
		up := Pipeline{Source: p.Source, Stages: append(slices.Clone(p.Stages[:at]), in)}
		<-listening
		upErr = Run(uctx, up, opts)
		if upErr != nil {
			// Killed first: its end then is the run's doing.
			pr.kill(killUpstream)
		}
		pr.closeStdin()
		return nil
	})
	g.Go(func() error {
		down := Pipeline{Source: out, Stages: p.Stages[at+1:]}
		downErr = Run(ctx, down, opts)
		listened() // had it failed before opening its source
		if downErr != nil || !out.ended {
			// Garbage, a failure after, or stages that want no more: the
			// program's output has no reader. Killed before its pipe
			// closes, so a SIGPIPE it would die of is the run's doing.
			pr.kill(killDownstream)
			stopUp()
		}
		pr.closeStdout()
		return nil
	})
	g.Wait()
	<-pr.exited
	<-pr.logged
	return pr.verdict(ctx, upErr, downErr)
}

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

// programInput is the sink of the stages before a program: its standard
// input, in dataset order (no positions, as no program knows them).
type programInput struct {
	ps *programStage
	pr *process
}

func (s *programInput) Name() string { return "exec" }
func (s *programInput) isSink()      {}

func (s *programInput) bind(e *env, in *arrow.Schema) (*bound, error) {
	f := s.ps.format(s.ps.o.In)
	if f != format.IPCStream {
		// Checked here so a schema CSV cannot hold fails before the
		// program sees a byte.
		w, err := format.NewWriter(io.Discard, f, in, e.mem)
		if err != nil {
			return nil, invalidf("%s --in %s: %v", s.pr.label, f, err)
		}
		w.Abort()
	}
	return &bound{name: "exec", newOp: func(operator) (operator, error) {
		op := &programSink{pr: s.pr}
		if f == format.IPCStream {
			s.pr.awaitReady()
			sw := NewStreamWriter(s.pr.stdin, in, StreamOptions{Mem: e.mem, HandOff: e.handOff})
			op.write, op.close, op.abort = sw.Write, sw.Close, sw.Abort
			return op, nil
		}
		w, err := format.NewWriter(s.pr.stdin, f, in, e.mem)
		if err != nil {
			return nil, err
		}
		op.write, op.close, op.abort = w.Write, w.Close, w.Abort
		return op, nil
	}}, nil
}

type programSink struct {
	pr    *process
	write func(arrow.RecordBatch) error
	close func() error
	abort func()
	done  bool
}

// stopped makes a write to a program that stopped reading (closed its
// standard input, or exited) the end of the input, not a failure: the
// program's exit says whether it failed.
func stopped(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return errEnough
	}
	return err
}

func (s *programSink) push(ctx context.Context, rec arrow.RecordBatch) error {
	return stopped(s.write(rec))
}

func (s *programSink) finish(ctx context.Context) error {
	s.done = true
	err := stopped(s.close())
	s.pr.closeStdin()
	return err
}

func (s *programSink) release() {
	if !s.done {
		s.abort()
	}
	s.pr.closeStdin()
}

// programOutput is the source of the stages after a program: what it
// writes on its standard output.
type programOutput struct {
	ps       *programStage
	pr       *process
	listened func() // called once the output is listened for
	src      Source
	ended    bool // the output was read to its end
}

func (s *programOutput) Name() string { return "exec" }

func (s *programOutput) open(ctx context.Context, e *env) (Source, error) {
	name := s.pr.label + ": output"
	var src Source
	var err error
	schema := s.ps.o.Schema
	if s.ps.format(s.ps.o.Out) != format.IPCStream {
		s.listened() // no hand-off to listen for
	}
	switch s.ps.format(s.ps.o.Out) {
	case format.IPCStream:
		src, err = ipcSourceStage{r: s.pr.stdout, name: name, listened: s.listened}.open(ctx, e)
	case format.CSV:
		var types map[string]string
		if schema != nil {
			types = map[string]string{}
			for _, f := range schema.Fields() {
				types[f.Name] = csvTypeName(f.Type)
			}
		}
		src, err = openCSV(s.pr.stdout, "stdout", e, CSVOptions{Types: types})
	case format.JSONLines:
		if schema != nil {
			rd := array.NewJSONReader(bufio.NewReaderSize(s.pr.stdout, 1<<20), schema, array.WithAllocator(e.mem), array.WithChunk(64<<10))
			src = &jsonSource{rd: rd, name: name}
		} else {
			src, err = openJSONLines(s.pr.stdout, "stdout", e, 0)
		}
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), s.pr.label) {
			err = fmt.Errorf("%s: %w", name, err)
		}
		return nil, err
	}
	if schema != nil && !sameColumns(schema, src.Schema()) {
		src.Close()
		return nil, fmt.Errorf("%s: the program wrote columns (%s), not those of --schema (%s)", name, schemaString(src.Schema()), schemaString(schema))
	}
	s.src = src
	return s, nil
}

func (s *programOutput) Schema() *arrow.Schema { return s.src.Schema() }

func (s *programOutput) Next(ctx context.Context) (arrow.RecordBatch, error) {
	rec, err := s.src.Next(ctx)
	switch {
	case err == io.EOF:
		s.ended = true
	case err != nil && !strings.HasPrefix(err.Error(), s.pr.label):
		err = fmt.Errorf("%s: output: %w", s.pr.label, err)
	}
	return rec, err
}

func (s *programOutput) Close() error { return s.src.Close() }

// sameColumns says a and b have the same column names and types, in order.
func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i, f := range a.Fields() {
		g := b.Field(i)
		if f.Name != g.Name || !arrow.TypeEqual(f.Type, g.Type) {
			return false
		}
	}
	return true
}

func csvTypeName(t arrow.DataType) string {
	for name, dt := range csvTypes {
		if name != "date" && arrow.TypeEqual(dt, t) {
			return name
		}
	}
	return "string"
}

// ColumnsSchema is the schema of columns named with from-csv's type
// names (plan.Exec's Schema), every column nullable.
func ColumnsSchema(names, types []string) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		dt, ok := csvTypes[types[i]]
		if !ok {
			return nil, invalidf("exec --schema %s=%s: unknown type", n, types[i])
		}
		fields[i] = arrow.Field{Name: n, Type: dt, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// firstProgram is the index of the first program among stages, or -1.
func firstProgram(stages []Stage) int {
	return slices.IndexFunc(stages, func(s Stage) bool { _, ok := s.(*programStage); return ok })
}
