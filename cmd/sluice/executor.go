package main

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/executors"
	"github.com/sluice-data/sluice/fanout/kubernetes"
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
	return exe, executorError(err)
}

// executorError makes the executors' refusals of their options usage
// errors.
func executorError(err error) error {
	if errors.Is(err, executors.ErrInvalid) {
		return usageError{err}
	}
	return err
}
