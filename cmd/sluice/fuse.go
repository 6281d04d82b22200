package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Piped stages fused: when a stage's standard output is a pipe read by
// another sluice stage, the reader runs the writer's stages itself, fused
// with its own as sluice run would, and no batch crosses the pipe. The
// writer then does nothing and ends with the reader's exit status. Only a
// writer whose pipeline starts with a scan (it reads no input of its own)
// and has not started its run is fused, and only into a reader of the same
// binary, user, working directory, environment, global flags and standard
// error; otherwise the stages hand batches over as before.

// processStart is about when this process started (its packages are
// initialised before main's).
var processStart = time.Now()

// fusePlan is what a writer gives the reader that fuses it: its stages'
// words, as sluice run would split them.
type fusePlan struct {
	Stages [][]string `json:"stages"`
}

// unfusable says why plan cannot be fused into a later stage, or "".
func (p *fusePlan) unfusable() string {
	if p == nil || len(p.Stages) == 0 {
		return "it reads a stream from its own input"
	}
	for _, words := range p.Stages {
		if len(words) == 0 {
			return "its plan has an empty stage"
		}
	}
	if p.Stages[0][0] != "scan" {
		return "its first stage is not a scan"
	}
	last := p.Stages[len(p.Stages)-1][0]
	if d := stageDefByName(last); d == nil || d.kind == kindSink {
		return "its last stage writes no stream"
	}
	return ""
}

// with is the plan followed by one more stage.
func (p *fusePlan) with(words []string) *fusePlan {
	stages := append(append([][]string(nil), p.Stages...), words)
	return &fusePlan{Stages: stages}
}

// stageWords are a stage command's words as a stage of sluice run: its
// name, the flags given (each as --name=value) and its arguments; false
// when a flag given has no place in a run's stage.
func stageWords(cmd *cobra.Command, args []string) ([]string, bool) {
	words := []string{cmd.Name()}
	ok := true
	inherited := cmd.InheritedFlags()
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if inherited.Lookup(f.Name) != nil {
			return // a global flag: the fused stages must agree on them
		}
		if f.Name == "cpuprofile" {
			ok = false
			return
		}
		if sv, isSlice := f.Value.(pflag.SliceValue); isSlice {
			for _, v := range sv.GetSlice() {
				words = append(words, "--"+f.Name+"="+v)
			}
			return
		}
		words = append(words, "--"+f.Name+"="+f.Value.String())
	})
	// "--" keeps an argument that starts with a dash an argument.
	words = append(words, "--")
	return append(words, args...), ok
}

// fusedExit ends a stage that another ran fused: it exits with that
// stage's status, which that stage reported itself.
type fusedExit struct{ code int }

func (e fusedExit) Error() string { return fmt.Sprintf("fused stage exited with %d", e.code) }

// pipeTrace says, on standard error with SLUICE_PIPE_TRACE set, what a
// stage's pipes did: which stages it runs, or which stage ran it.
func pipeTrace(format string, a ...any) {
	if os.Getenv("SLUICE_PIPE_TRACE") != "" {
		fmt.Fprintf(os.Stderr, "sluice: pipe: "+format+"\n", a...)
	}
}

// stagesText is stages as sluice run's text, by their names.
func stagesText(stages [][]string) string {
	names := make([]string, len(stages))
	for i, w := range stages {
		names[i] = w[0]
	}
	return strings.Join(names, " | ")
}

// fuseMode is SLUICE_PIPE's word on pipes between stages: fuse (the
// default), handoff (batches through shared memory, no fusing) or plain.
func fuseMode(v string) string {
	switch strings.ToLower(v) {
	case "plain", "handoff":
		return strings.ToLower(v)
	}
	return "fuse"
}
