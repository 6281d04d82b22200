package executors

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/slurm"
)

func TestNew(t *testing.T) {
	exe, err := New(Options{Name: "local", Env: []string{"A=1"}}, "/bin/sluice", []string{"worker"})
	if l, ok := exe.(*fanout.Local); err != nil || !ok || strings.Join(l.Command, " ") != "/bin/sluice worker" || l.Env[0] != "A=1" {
		t.Errorf("local: %#v, %v", exe, err)
	}
	exe, err = New(Options{Name: "slurm", Sbatch: []string{"--partition=io"}}, "/bin/sluice", []string{"worker"})
	if s, ok := exe.(*slurm.Executor); err != nil || !ok || s.Sbatch[0] != "--partition=io" {
		t.Errorf("slurm: %#v, %v", exe, err)
	}
	// A program that does not import fanout/executors/k8s (this test's
	// example does).
	defer func(f func(Options, []string) (fanout.Executor, error)) { newKubernetes = f }(newKubernetes)
	newKubernetes = nil
	exe, err = New(Options{Name: "kubernetes", Image: "img", DryRun: true}, "/bin/sluice", []string{"worker"})
	if err == nil || !strings.Contains(err.Error(), "sluice-full") || !strings.Contains(err.Error(), "fanout/executors/k8s") {
		t.Errorf("kubernetes not linked in: %#v, %v", exe, err)
	}
	for _, o := range []Options{{Name: "nomad"}, {Name: "kubernetes"}, {Name: "local", DryRun: true}} {
		if _, err := New(o, "/bin/sluice", nil); !errors.Is(err, ErrInvalid) || strings.HasPrefix(err.Error(), "invalid") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestDryRunText(t *testing.T) {
	docs := func() [][]byte { return [][]byte{[]byte("a\n"), []byte("b\n")} }
	if got := DryRunText("kubernetes", docs()); !strings.HasPrefix(got, "a\n---\n# phase 1") {
		t.Errorf("kubernetes: %q", got)
	}
	if got := DryRunText("slurm", [][]byte{[]byte("#!/bin/sh\n# sbatch x\n")}); !strings.Contains(got, "\nsbatch x") {
		t.Errorf("slurm: %q", got)
	}
}

// Bind's defaults are the options of no flags, which New takes: the
// local executor; and --sbatch repeats.
func TestOptionsBind(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	o.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.Name != "local" || o.DryRun || o.Sbatch != nil || o.Deadline != 0 || o.TTL != time.Hour {
		t.Errorf("Bind's defaults = %+v", o)
	}
	if exe, err := New(o, "/bin/sluice", []string{"worker"}); err != nil {
		t.Errorf("New of the defaults: %v", err)
	} else if _, ok := exe.(*fanout.Local); !ok {
		t.Errorf("New of the defaults: %T, want the local executor", exe)
	}
	if err := fs.Parse([]string{"--executor", "slurm", "--sbatch", "-p", "--sbatch", "--qos=x,y"}); err != nil || o.Name != "slurm" || strings.Join(o.Sbatch, " ") != "-p --qos=x,y" {
		t.Errorf("--executor slurm --sbatch twice: %+v, %v", o, err)
	}
}
