package exec

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
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
	pr, err := startProgram(ps)
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
	}()

	in := &programInput{ps: ps, pr: pr}
	out := &programOutput{ps: ps, pr: pr}
	// The two halves share the caller's ctx only: each ends on its own,
	// and the program's fate decides which error is the run's.
	var upErr, downErr error
	// Stages after that want no more stop the stages before too.
	uctx, stopUp := context.WithCancel(ctx)
	defer stopUp()
	var g errgroup.Group
	g.Go(func() error {
		up := Pipeline{Source: p.Source, Stages: append(slices.Clone(p.Stages[:at]), in)}
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
