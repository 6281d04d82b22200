package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/executors"
	"github.com/sluice-data/sluice/fanout/kubernetes"
	"github.com/sluice-data/sluice/plan"
)

// executorOptions choose where a fanned-out run's workers run.
type executorOptions struct {
	executors.Options
}

func addExecutorFlags(f *pflag.FlagSet, o *executorOptions) {
	f.StringVar(&o.Name, "executor", "local", "where workers run: local, slurm or kubernetes")
	f.BoolVar(&o.DryRun, "dry-run", false, "print what the slurm or kubernetes executor would submit for each phase; submit nothing")
	f.StringArrayVar(&o.Sbatch, "sbatch", nil, "a further argument for sbatch, such as --partition=batch (repeatable; slurm)")
	f.StringVar(&o.SlurmLogs, "slurm-logs", "", "directory shared with the nodes for the tasks' logs (slurm; default: a temporary one)")
	f.StringVar(&o.Image, "image", "", "container image with sluice on its PATH (kubernetes)")
	f.StringVar(&o.Namespace, "namespace", "", "namespace of the Jobs (kubernetes; default: the kubeconfig's)")
	f.StringVar(&o.CPU, "cpu", "", "CPU of each worker, such as 2 or 500m (kubernetes)")
	f.StringVar(&o.Mem, "mem", "", "memory request and limit of each worker, such as 4Gi (kubernetes)")
	f.StringVar(&o.Secret, "secret", "", "Secret holding the workers' AWS_* credentials (kubernetes; default: the pod's identity)")
	f.StringVar(&o.ServiceAccount, "service-account", "", "service account of the workers' pods (kubernetes)")
	f.DurationVar(&o.Deadline, "deadline", kubernetes.DefaultDeadline, "longest a phase's Job may run, so a dead driver's Job ends (kubernetes; negative: no limit)")
	f.DurationVar(&o.TTL, "ttl", time.Hour, "keep a finished Job the driver could not delete this long (kubernetes)")
}

// check refuses executor flags for a run in this process.
func (o *executorOptions) check(workers int) error {
	if workers == 0 && (o.Name != "local" || o.DryRun) {
		return usagef("--executor %s and --dry-run fan out: give --workers N", o.Name)
	}
	return nil
}

// executor makes the chosen executor, its workers running this binary
// (self) with args.
func (o *executorOptions) executor(self string, args []string) (fanout.Executor, error) {
	exe, err := executors.New(o.Options, self, args)
	if errors.Is(err, executors.ErrInvalid) {
		return nil, usageError{err}
	}
	return exe, err
}

// printDryRun writes the job's spec and prints what each phase would
// submit: the first phase's Job (or sbatch command) as it can be applied
// (or run), the later phases' commented out, as each needs the previous
// phase committed by the driver. What it wrote and what applying does
// goes to stderr.
func (o *executorOptions) printDryRun(ctx context.Context, w io.Writer, p *plan.Plan, opts fanout.Options) error {
	m, ok := opts.Executor.(fanout.Manifester)
	if !ok {
		return usagef("--dry-run: the %s executor has no manifest to show", o.Name)
	}
	spec, docs, err := fanout.DryRun(ctx, p, opts, m)
	if err != nil {
		return err
	}
	jobURL := strings.TrimSuffix(spec, path.Base(spec))
	if _, err := fmt.Fprint(w, executors.DryRunText(o.Name, docs)); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "sluice: --dry-run submitted nothing; it wrote the job's spec, %s, which the workers read.\n"+
		"sluice: submitted by hand, the first phase's tasks run and leave their outputs under %s, which only the driver commits, reads and deletes;\n"+
		"sluice: when done: sluice rm --recursive %s\n", spec, jobURL, jobURL)
	return nil
}
