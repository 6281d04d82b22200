package fanout

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Executor runs the phases of a job on workers: the local one starts
// processes of this machine task by task, retrying and duplicating them
// itself; a cluster's (fanout/slurm, fanout/kubernetes) submits each
// phase as one array job that the batch system runs and retries. It
// knows nothing of what the workers do. Which task is done is read from
// the object store, never from the executor: a worker that exits 0
// without a done record has not done its task, and one killed after
// writing it has; the driver commits one done record per task.
type Executor interface {
	// RunPhase runs every task of the phase and returns once each has
	// done its task (nil), one failed every attempt (a *TaskError with
	// Task, Worker, Attempts and Err set, Err being the last lines the
	// worker logged), or ctx was cancelled; before it returns, none of
	// its workers is left running.
	RunPhase(ctx context.Context, r PhaseRun) error
}

// PhaseRun is one phase of a job as an executor runs it: Tasks workers
// `sluice worker Spec --phase Phase`, each told its index in the
// environment (JOB_COMPLETION_INDEX, or SLURM_ARRAY_TASK_ID) and its
// attempt's label in SLUICE_ATTEMPT.
type PhaseRun struct {
	// Job is the job's ID (job-<hex>), for names and labels.
	Job string
	// Spec is the URL of the job's spec, SpecSum the SHA-256 of its
	// bytes: a worker runs only the spec whose bytes hash to it.
	Spec    string
	SpecSum string
	Phase   int
	Kind    string // PhaseMap or PhaseReduce
	Tasks   int
	// Workers is how many tasks may run at once.
	Workers int
	// Attempts is how many times a task may be started.
	Attempts int
	// Done, when set, reads from the store whether task i has committed
	// its output and, when it has not, the error its last failed attempt
	// recorded (empty without one). Without it (workers that are not a
	// job's tasks), a worker that exits 0 has done its task.
	Done func(ctx context.Context, i int) (done bool, failure string, err error)
	// Progress, when set, gets the counts as the executor learns them.
	Progress func(Progress)
	// Log, when set, gets a line for each retry.
	Log func(format string, a ...any)
	// Committed, when set, marks the tasks whose outputs are committed
	// already (a resumed job's): an executor that can runs only the
	// others. One that cannot runs them again, which is harmless.
	Committed []bool
	// Watch, when set, gets each attempt's start and end from an
	// executor that starts attempts one by one; one that starts a
	// phase's tasks as a whole leaves it alone.
	Watch func(AttemptEvent)
	// Once says no two attempts of a task may run at once (a phase with
	// side effects): an executor duplicates no straggler, and starts a
	// task again only after its attempt has ended.
	Once bool
	// Argv, when set, replaces the job's arguments (Spec, --phase Phase)
	// after the executor's command: workers of another kind of this
	// binary (sluice bench's), each finding its index in the environment
	// as a job's worker does.
	Argv []string
}

// Args is the worker's arguments after the worker command.
func (r PhaseRun) Args() []string {
	if r.Argv != nil {
		return r.Argv
	}
	return []string{r.Spec, "--phase", strconv.Itoa(r.Phase), "--spec-sha256", r.SpecSum}
}

// Name is a name for the phase's run, unique to the job and phase, that
// is a valid Kubernetes object name and Slurm job name.
func (r PhaseRun) Name() string {
	return fmt.Sprintf("sluice-%s-p%d", strings.TrimPrefix(r.Job, "job-"), r.Phase)
}

// Manifester is an Executor that can show what it would submit (sluice
// run --dry-run).
type Manifester interface {
	Executor
	// Manifest writes what RunPhase would submit for r.
	Manifest(r PhaseRun) ([]byte, error)
}
