package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/internal/profile"
	"github.com/sluice-data/sluice/internal/stdio"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// Pipeline stages. Each is defined once, with its flags, in package plan,
// and made here into a command of its own (`sluice filter EXPR`, reading
// an Arrow IPC stream on stdin and writing one on stdout); sluice run
// parses its text into the same plan nodes.

// stageCommands makes a command for every stage that has one.
func stageCommands(root *cobra.Command) []*cobra.Command {
	root.AddGroup(&cobra.Group{ID: "pipeline", Title: "Pipeline stages (Arrow IPC on stdin and stdout; in one process with sluice run):"})
	var cmds []*cobra.Command
	for _, d := range plan.Defs() {
		if !d.Command {
			continue
		}
		long := d.Long
		if long == "" {
			long = d.Short + "."
		}
		cmd := &cobra.Command{
			Use:   d.Use,
			Short: d.Short,
			Long: long + `

A stage of sluice run, or a command of its own in a pipe (see sluice help pipes).`,
			Example: d.Example,
			GroupID: "pipeline",
			Args: func(cmd *cobra.Command, args []string) error {
				if err := d.CheckArgs(args); err != nil {
					return usageError{err}
				}
				return nil
			},
		}
		build := d.Bind(cmd.Flags())
		var cpuProfile string
		cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the stage to FILE (for go tool pprof)")
		cmd.RunE = func(cmd *cobra.Command, args []string) error {
			st, err := build(args)
			if err != nil {
				return stageError(err)
			}
			stop, err := profile.StartCPU(cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
			return runStage(cmd.Context(), d, st, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

// stageEnv is what the stages of this process read and write.
func stageEnv(stdin io.Reader, stdout, stderr io.Writer, stores *store.Set) exec.Env {
	width := stdio.TermWidth(stdout)
	return exec.Env{
		Stdin: stdin, Stdout: stdout, Width: width, Output: exec.OutputTo(stdout, width),
		ScanStats: func(s *plan.Scan) func(string, scan.Stats) {
			pr, _ := scanProfile(s)
			return func(url string, st scan.Stats) {
				if len(s.URLs) > 1 {
					fmt.Fprintf(stderr, "scan %s:\n", url)
				}
				fmt.Fprint(stderr, st.Report(pr.Link))
			}
		},
		Link: func(s *plan.Scan) (exec.Opener, error) {
			pr, err := scanProfile(s)
			if err != nil {
				return nil, err
			}
			return withLink(stores, s.Sim, pr), nil
		},
	}
}

// spareScans gives the scans of p a spare processor when they read over
// a network (see spareProc).
func spareScans(p *plan.Plan) {
	for _, st := range p.Stages {
		if s, ok := st.(*plan.Scan); ok {
			if pr, err := scanProfile(s); err == nil {
				spareProc(s.URLs, pr)
			}
		}
	}
}

// runStage runs one stage as its own process: it does its own work,
// under its own nice, affinity, cgroup and limits. Batches from a sluice
// stage before it come through shared memory on Linux (SLUICE_PIPE=plain:
// through the pipe).
func runStage(ctx context.Context, d *plan.Def, st plan.Stage, stdin io.Reader, stdout, stderr io.Writer) error {
	stdio.QuietPipes(stdin, stdout)
	input := d.TakesInput(st, stdio.IsPipeOrFile(stdin))
	if input && stdio.IsTerminal(stdin) {
		// Waiting for a person to type an Arrow stream would look like a hang.
		return usagef("%s reads an Arrow IPC stream on stdin, and stdin is a terminal: pipe a stage into it (sluice scan DIR -o - | sluice %s) or redirect a file (< q.arrow)", d.Name, d.Name)
	}
	stores := newStoreSet()
	defer stores.Close()
	env := stageEnv(stdin, stdout, stderr, stores)
	env.Input = input
	p := &plan.Plan{Stages: []plan.Stage{st}}
	spareScans(p)
	pipe, err := exec.Compile(p, env)
	if err != nil {
		return stageError(err)
	}
	opts := exec.Options{Open: stores.Open, Mem: mempool.NewMapped(0), HandOff: handOff()}
	if os.Getenv("SLUICE_PIPE_TRACE") != "" {
		opts.HandedOff = func() { fmt.Fprintf(stderr, "sluice: pipe: %s: read its input through shared memory\n", d.Name) }
	}
	return stageError(exec.Run(ctx, pipe, opts))
}

// handOff says whether stages pass batches to and from sluice stages at
// the other end of their pipes through shared memory (exec.Options.HandOff):
// unless SLUICE_PIPE=plain.
func handOff() bool { return os.Getenv("SLUICE_PIPE") != "plain" }

// stageError classifies a pipeline's error for the exit code: a mistake
// in how it was written is a usage error; a reader that closed our
// stdout (head downstream) is no error.
func stageError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EPIPE):
		return nil
	case errors.Is(err, exec.ErrInvalid):
		var ue usageError
		if errors.As(err, &ue) {
			return err
		}
		return usageError{err}
	}
	return err
}
