// Package executors makes a fanout.Executor by name (local, slurm or
// kubernetes) from one set of options: what a program that lets its user
// choose where workers run needs (sluice run --executor, sluice bench
// --workers). The kubernetes executor is there only when the program
// imports fanout/executors/k8s: the Kubernetes client's packages cost
// every process that links them tens of milliseconds to start, which
// sluice's stage processes do not pay (sluice-full links it).
package executors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/slurm"
	"github.com/sluice-data/sluice/plan"
)

// ErrInvalid marks options that cannot make an executor
// (errors.Is(err, ErrInvalid)).
var ErrInvalid = errors.New("invalid executor options")

// invalid is an error of ErrInvalid that says only what is wrong.
type invalid string

func (e invalid) Error() string        { return string(e) }
func (e invalid) Is(target error) bool { return target == ErrInvalid }

// Options choose an executor and configure it; each field applies to the
// executor its comment names.
type Options struct {
	// Name is local (processes of this machine), slurm (each phase one
	// array job) or kubernetes (each phase one Indexed Job).
	Name string
	// DryRun makes an executor only to show its manifests
	// (fanout.Manifester): kubernetes then needs no cluster.
	DryRun bool
	// Env (NAME=VALUE) is added to the workers' environment.
	Env []string

	Sbatch    []string // slurm: further arguments of sbatch
	SlurmLogs string   // slurm: the tasks' output directory, shared with the nodes

	// kubernetes: the Jobs' image (sluice-full on its PATH), namespace (default:
	// the kubeconfig's), each worker's CPU and memory, the Secret holding
	// the workers' S3 credentials, their service account, the longest a
	// Job may run and how long a finished one is kept.
	Image, Namespace, CPU, Mem, Secret, ServiceAccount string
	Deadline, TTL                                      time.Duration
}

// Bind defines the flags that choose and configure an executor on fs,
// bound to o's fields, with their defaults; Env is the caller's to fill.
// They are defined here, beside the checks that name them, so that every
// command that takes them (sluice run, sluice bench) defines them once,
// as plan.BindScan does a scan's.
func (o *Options) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&o.Name, "executor", "local", "where workers run: local, slurm or kubernetes")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print what the slurm or kubernetes executor would submit for each phase; submit nothing")
	fs.StringArrayVar(&o.Sbatch, "sbatch", nil, "a further argument for sbatch, such as --partition=batch (repeatable; slurm)")
	fs.StringVar(&o.SlurmLogs, "slurm-logs", "", "directory shared with the nodes for the tasks' logs (slurm; default: a temporary one)")
	fs.StringVar(&o.Image, "image", "", "container image with sluice-full on its PATH (kubernetes)")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace of the Jobs (kubernetes; default: the kubeconfig's)")
	fs.StringVar(&o.CPU, "cpu", "", "CPU of each worker, such as 2 or 500m (kubernetes)")
	fs.StringVar(&o.Mem, "mem", "", "memory request and limit of each worker, such as 4Gi (kubernetes)")
	fs.StringVar(&o.Secret, "secret", "", "Secret holding the workers' AWS_* credentials (kubernetes; default: the pod's identity)")
	fs.StringVar(&o.ServiceAccount, "service-account", "", "service account of the workers' pods (kubernetes)")
	fs.DurationVar(&o.Deadline, "deadline", 0, "longest a phase's Job may run, so a dead driver's Job ends (kubernetes; 0: a day; negative: no limit)")
	fs.DurationVar(&o.TTL, "ttl", time.Hour, "keep a finished Job the driver could not delete this long (kubernetes)")
}

// newKubernetes makes the kubernetes executor running command in its
// pods; set by RegisterKubernetes.
var newKubernetes func(o Options, command []string) (fanout.Executor, error)

// RegisterKubernetes makes New able to make the kubernetes executor with
// f; fanout/executors/k8s calls it when imported.
func RegisterKubernetes(f func(o Options, command []string) (fanout.Executor, error)) {
	newKubernetes = f
}

// New makes the executor o names. Its workers run self with args on this
// machine and on Slurm's nodes, and sluice-full with args in a pod.
func New(o Options, self string, args []string) (fanout.Executor, error) {
	command := append([]string{self}, args...)
	switch o.Name {
	case "local":
		if o.DryRun {
			return nil, invalid("--dry-run: the local executor submits nothing; use it with --executor slurm or kubernetes")
		}
		l := fanout.NewLocal(command)
		l.Env = o.Env
		return l, nil
	case "slurm":
		s := slurm.New(command)
		s.Sbatch, s.LogDir, s.Env = o.Sbatch, o.SlurmLogs, o.Env
		return s, nil
	case "kubernetes":
		if o.Image == "" {
			return nil, invalid("--executor kubernetes needs --image, an image with sluice-full on its PATH (see the Dockerfile)")
		}
		if newKubernetes == nil {
			return nil, errors.New("--executor kubernetes: this program is built without it (sluice-full has it; a Go program imports github.com/sluice-data/sluice/fanout/executors/k8s)")
		}
		// The pods run sluice-full from the image's PATH: the program
		// that has the kubernetes executor has every other part too.
		return newKubernetes(o, append([]string{"sluice-full"}, args...))
	}
	return nil, invalid(fmt.Sprintf("--executor %q: want local, slurm or kubernetes", o.Name))
}

// DryRunText is fanout.DryRunText for the executor named: the first
// phase's sbatch command made runnable in a shell, Kubernetes' phases as
// YAML documents.
func DryRunText(name string, docs [][]byte) string {
	sep := ""
	switch {
	case name == "slurm" && len(docs) > 0:
		docs[0] = slurm.Runnable(docs[0])
	case name == "kubernetes":
		sep = "---\n"
	}
	return fanout.DryRunText(docs, sep)
}

// DryRun shows what the executor named would submit to run p, submitting
// nothing: it writes the job's spec (fanout.DryRun; opts.Executor is the
// one New made with DryRun set) and writes to w each phase's submission,
// as DryRunText gives it, then to note what was written, what submitting
// the first phase by hand does, and how to remove the job when done.
func DryRun(ctx context.Context, w, note io.Writer, name string, p *plan.Plan, opts fanout.Options) error {
	m, ok := opts.Executor.(fanout.Manifester)
	if !ok {
		return invalid(fmt.Sprintf("--dry-run: the %s executor has no manifest to show", name))
	}
	spec, docs, err := fanout.DryRun(ctx, p, opts, m)
	if err != nil {
		return err
	}
	jobURL := strings.TrimSuffix(spec, path.Base(spec))
	if _, err := fmt.Fprint(w, DryRunText(name, docs)); err != nil {
		return err
	}
	fmt.Fprintf(note, "sluice: --dry-run submitted nothing; it wrote the job's spec, %s, which the workers read.\n"+
		"sluice: submitted by hand, the first phase's tasks run and leave their outputs under %s, which only the driver commits, reads and deletes;\n"+
		"sluice: when done: sluice rm --recursive %s\n", spec, jobURL, jobURL)
	return nil
}
