package fanouthook

import (
	"context"
	"time"

	"github.com/spf13/pflag"
)

// Flags are the hooks sluice run's hidden --x- flags set: a test of the
// CLI makes a job misbehave through them.
type Flags struct {
	// DuplicateAll is Driver.DuplicateAll (--x-duplicate-all).
	DuplicateAll bool
	// PauseBeforeCommit, above zero, is every worker's EnvPause
	// (--x-pause-before-commit).
	PauseBeforeCommit time.Duration
	// LeaseEvery is Driver.LeaseEvery (--x-lease-every).
	LeaseEvery time.Duration
	// CorruptSpec makes the SpecEdit HalveSpec (--x-corrupt-spec).
	CorruptSpec bool
	// SpecPlan, when set and CorruptSpec is not, makes the SpecEdit
	// ReplacePlan(SpecPlan) (--x-spec-plan).
	SpecPlan string
	// WorkerEnv (NAME=VALUE) is added to the workers' environment
	// (--x-worker-env): a worker that cannot reach the store, or one of
	// the workers' hooks (EnvStraggle, EnvFail).
	WorkerEnv []string
}

// Bind defines the hooks' flags on fs, hidden, bound to f's fields, with
// their defaults: none set.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	fs.BoolVar(&f.DuplicateAll, "x-duplicate-all", false, "start two attempts of every task (a test of exactly-once commits)")
	fs.DurationVar(&f.PauseBeforeCommit, "x-pause-before-commit", 0, "workers wait this long before committing (a test of killed workers)")
	fs.BoolVar(&f.CorruptSpec, "x-corrupt-spec", false, "write half of the job's spec (a test of workers given a corrupt one)")
	fs.StringVar(&f.SpecPlan, "x-spec-plan", "", "the plan JSON the workers get instead (a test of a plan a worker does not know)")
	fs.StringArrayVar(&f.WorkerEnv, "x-worker-env", nil, "NAME=VALUE added to the workers' environment (a test of workers that cannot reach the store, or of hooks)")
	fs.DurationVar(&f.LeaseEvery, "x-lease-every", 0, "the driver renews the job's lease this often (a test of workers whose driver died; default 10s)")
	for _, name := range []string{"x-duplicate-all", "x-pause-before-commit", "x-corrupt-spec", "x-spec-plan", "x-worker-env", "x-lease-every"} {
		_ = fs.MarkHidden(name)
	}
}

// Apply returns ctx carrying the driver's hooks f sets, and env with the
// workers' added, for the executor to pass on to them.
func (f Flags) Apply(ctx context.Context, env []string) (context.Context, []string) {
	env = append(env, f.WorkerEnv...)
	if f.PauseBeforeCommit > 0 {
		env = append(env, EnvPause+"="+f.PauseBeforeCommit.String())
	}
	h := &Driver{DuplicateAll: f.DuplicateAll, LeaseEvery: f.LeaseEvery}
	switch {
	case f.CorruptSpec:
		h.SpecEdit = HalveSpec
	case f.SpecPlan != "":
		h.SpecEdit = ReplacePlan(f.SpecPlan)
	}
	return WithDriver(ctx, h), env
}
