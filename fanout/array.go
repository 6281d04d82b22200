package fanout

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/plan"
)

// jobID is the last element of a job's URL (job-<hex>).
func jobID(jobURL string) string {
	return path.Base(strings.TrimSuffix(jobURL, "/"))
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
	if err := opts.Validate(); err != nil {
		return "", nil, fmt.Errorf("%w: %v", exec.ErrInvalid, err)
	}
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
	b, err := newSpec(p, jobURL, pl, opts).Marshal()
	if err != nil {
		return "", nil, err
	}
	for i, ph := range pl.phases {
		doc, err := m.Manifest(PhaseRun{Job: jobID(jobURL), Spec: jobURL + specKey, SpecSum: specSum(b), Phase: i, Kind: ph.Kind, Tasks: ph.Tasks,
			Workers: opts.Workers, Attempts: opts.Attempts})
		if err != nil {
			return "", nil, err
		}
		docs = append(docs, doc)
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

// DryRunText joins what DryRun returned, a manifest per phase, into one
// text for a person to apply (kubectl apply -f) or run (sh): the first
// phase's manifest as it is, each later phase's commented out under a line
// saying why (it runs only once the driver has committed the phase before
// it). sep goes before each later phase ("---\n" between YAML documents).
func DryRunText(docs [][]byte, sep string) string {
	var b strings.Builder
	for i, d := range docs {
		if i == 0 {
			b.Write(d)
			continue
		}
		b.WriteString(sep)
		fmt.Fprintf(&b, "# phase %d runs once the driver has committed phase %d (sluice run, without --dry-run); not on its own:\n", i, i-1)
		for _, l := range strings.SplitAfter(strings.TrimSuffix(string(d), "\n"), "\n") {
			b.WriteString("# " + l)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// LastLines is the last n non-empty lines of a worker's log as one line
// ("; " between them), without the "sluice: " prefix of its errors: how
// an executor reports a failed worker's own words.
func LastLines(log string, n int) string {
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
