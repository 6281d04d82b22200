package fanout

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/plan"
)

// ArrayExecutor is an executor that runs a whole phase as one job of a
// cluster's batch system (a Slurm array job, a Kubernetes Indexed Job):
// the system starts the tasks, keeps at most Workers of them running and
// retries a failed one. The driver gives it whole phases instead of
// starting tasks one by one; its Start need not work. Which task is done
// is still read from the object store.
type ArrayExecutor interface {
	Executor
	// RunArray runs every task of the phase and returns once the system
	// says they all ended well (nil), one failed every attempt (a
	// *TaskError with Task, Worker, Attempts and Err set, Err being the
	// last lines the worker logged), or ctx was cancelled; before it
	// returns, nothing of the array is left running.
	RunArray(ctx context.Context, a Array) error
}

// Array is one phase of a job as an ArrayExecutor runs it: Tasks workers
// `sluice worker Spec --phase Phase`, each with its index from the system
// (JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID).
type Array struct {
	// Job is the job's ID (job-<hex>), for names and labels.
	Job string
	// Spec is the URL of the job's spec.
	Spec  string
	Phase int
	Kind  string // PhaseMap or PhaseReduce
	Tasks int
	// Workers is how many tasks may run at once.
	Workers int
	// Attempts is how many times a task may be started.
	Attempts int
	// Done, when set, reports whether task i has committed its output
	// (from the store).
	Done func(ctx context.Context, i int) (bool, error)
	// Progress, when set, gets the counts as the executor learns them.
	Progress func(Progress)
	// Log, when set, gets a line for each retry.
	Log func(format string, a ...any)
	// Argv, when set, replaces the job's arguments (Spec, --phase Phase)
	// after the executor's command: an array of other workers of this
	// binary (sluice bench's), each finding its index in the environment
	// as a job's worker does.
	Argv []string
}

// Args is the worker's arguments after the worker command.
func (a Array) Args() []string {
	if a.Argv != nil {
		return a.Argv
	}
	return []string{a.Spec, "--phase", strconv.Itoa(a.Phase)}
}

// Name is a name for the array, unique to the job and phase, that is a
// valid Kubernetes object name and Slurm job name.
func (a Array) Name() string {
	return fmt.Sprintf("sluice-%s-p%d", strings.TrimPrefix(a.Job, "job-"), a.Phase)
}

// jobID is the last element of a job's URL (job-<hex>).
func jobID(jobURL string) string {
	return path.Base(strings.TrimSuffix(jobURL, "/"))
}

// runArray runs phase pi with an ArrayExecutor and writes its manifest
// from the done records.
func (d *driver) runArray(pi int, ae ArrayExecutor) (*Manifest, error) {
	ph := d.spec.Phases[pi]
	a := Array{
		Job: jobID(d.jobURL), Spec: d.jobURL + specKey, Phase: pi, Kind: ph.Kind, Tasks: ph.Tasks,
		Workers: d.opts.Workers, Attempts: d.opts.Attempts, Progress: d.opts.Progress, Log: d.logf,
		Done: func(ctx context.Context, i int) (bool, error) {
			out, _, err := d.claims(pi, i)
			return out != nil, err
		},
	}
	if err := ae.RunArray(d.ctx, a); err != nil {
		if te, ok := err.(*TaskError); ok {
			te.Phase, te.Tasks = ph.Kind, ph.Tasks
			if ph.Kind == PhaseMap && te.Task >= 0 && te.Task < len(ph.Pieces) {
				te.Piece = ph.Pieces[te.Task].String()
			}
			if _, failure, cerr := d.claims(pi, te.Task); cerr == nil && failure != nil && te.Err == "" {
				te.Err = failure.Error
			}
		}
		return nil, err
	}
	m := &Manifest{Phase: pi}
	for i := range ph.Tasks {
		out, failure, err := d.claims(pi, i)
		if err != nil {
			return nil, err
		}
		if out == nil {
			te := &TaskError{Phase: ph.Kind, Task: i, Tasks: ph.Tasks, Worker: a.Name(), Attempts: 1,
				Err: "the worker ended well without committing its output"}
			if failure != nil {
				te.Err = failure.Error
			}
			return nil, te
		}
		m.Outputs = append(m.Outputs, *out)
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return nil, err
	}
	if err := d.j.put(d.ctx, manifestKey(pi), b); err != nil {
		return nil, err
	}
	return m, nil
}

// Manifester is an ArrayExecutor that can show what it would submit
// (sluice run --dry-run).
type Manifester interface {
	ArrayExecutor
	// Manifest writes what RunArray would submit for a.
	Manifest(a Array) ([]byte, error)
}

// DryRun plans p as Run would, writes the
// job's spec under a new job prefix of opts.Store, and returns the spec's
// URL and what the executor would submit for each phase. Nothing is
// submitted: the first phase's manifest, submitted by hand (kubectl
// apply, sbatch), runs its tasks as is; a later phase's needs the
// previous phase committed, which only the driver does. The spec is the
// only object written (the workers read it; a manifest without it would
// not run); no other object of the job exists until a worker runs.
func DryRun(ctx context.Context, p *plan.Plan, opts Options, m Manifester) (specURL string, docs [][]byte, err error) {
	opts = opts.withDefaults()
	if opts.Store == "" {
		return "", nil, fmt.Errorf("%w: a dry run for a cluster needs --store, a URL the workers can reach", exec.ErrInvalid)
	}
	if strings.HasPrefix(opts.Store, "mem://") {
		return "", nil, fmt.Errorf("%w: the job's store %s lives in this process; workers need one they can reach (file:// or s3://)", exec.ErrInvalid, opts.Store)
	}
	if opts.Out != "" && !strings.HasSuffix(opts.Out, "/") {
		opts.Out += "/"
	}
	compiled, err := exec.Compile(p, opts.Env)
	if err != nil {
		return "", nil, err
	}
	pl, err := makePlan(ctx, p, compiled, opts)
	if err != nil {
		return "", nil, err
	}
	jobURL, _, err := newJobPrefix(opts.Store)
	if err != nil {
		return "", nil, err
	}
	for i, ph := range pl.phases {
		b, err := m.Manifest(Array{Job: jobID(jobURL), Spec: jobURL + specKey, Phase: i, Kind: ph.Kind, Tasks: ph.Tasks,
			Workers: opts.Workers, Attempts: opts.Attempts})
		if err != nil {
			return "", nil, err
		}
		docs = append(docs, b)
	}
	b, err := newSpec(p, jobURL, pl, opts).Marshal()
	if err != nil {
		return "", nil, err
	}
	st, prefix, err := opts.open(ctx, jobURL)
	if err != nil {
		return "", nil, fmt.Errorf("job store: %w", err)
	}
	defer closeStore(opts.Open, st)
	if err := (&job{st: st, prefix: prefix}).put(ctx, specKey, b); err != nil {
		return "", nil, err
	}
	return jobURL + specKey, docs, nil
}

// indexList writes task indexes as Slurm's --array takes them and
// Kubernetes writes completedIndexes: ascending, runs as ranges
// ("0-3,5,7-9").
func indexList(idx []int) string {
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return b.String()
}

// lastLines is the last n non-empty lines of a worker's log as one line
// ("; " between them), without the "sluice: " prefix of its errors.
func lastLines(log string, n int) string {
	var keep []string
	lines := strings.Split(strings.TrimSpace(log), "\n")
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append(keep, strings.TrimPrefix(l, "sluice: "))
		}
	}
	for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
		keep[i], keep[j] = keep[j], keep[i]
	}
	return strings.Join(keep, "; ")
}
