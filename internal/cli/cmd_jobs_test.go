package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// A job kept in a store is listed by jobs ls, left alone by a gc of
// older jobs, and removed whole by jobs rm; bad arguments fail cleanly.
func TestJobs(t *testing.T) {
	tg := localTarget(t)
	jobs := filepath.Join(t.TempDir(), "jobs")
	if r := sluice(t, nil, "run", "--workers", "2", "--keep", "--store", jobs, "scan "+tg.lineitem+" | shuffle --by l_orderkey --to 2 | count-by l_returnflag | to-csv"); r.code != 0 {
		t.Fatalf("run: %s", r.stderr)
	}
	r := sluice(t, nil, "jobs", "ls", jobs)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 2 || !strings.Contains(lines[1], " 2/2 ") {
		t.Fatalf("jobs ls: exit %d, %q", r.code, r.stdout)
	}
	fields := strings.Fields(lines[1])
	job := fields[len(fields)-1]
	if r := sluice(t, nil, "jobs", "gc", jobs, "--older-than", "1h"); r.code != 0 || r.stdout != "" {
		t.Fatalf("gc of jobs older than an hour: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
	if r := sluice(t, nil, "jobs", "rm", job); r.code != 0 || !strings.Contains(r.stdout, "removed "+job) {
		t.Fatalf("jobs rm: exit %d, %q %s", r.code, r.stdout, r.stderr)
	}
	if left := (fanOutTarget{jobs: jobs + "/"}).left(t); len(left) != 0 {
		t.Fatalf("left after jobs rm: %q", left)
	}
	if r := sluice(t, nil, "jobs", "ls", jobs); r.code != 0 || strings.Count(strings.TrimSpace(r.stdout), "\n") != 0 {
		t.Fatalf("jobs ls after rm: %q", r.stdout)
	}
	assertCleanFailure(t, sluice(t, nil, "jobs", "rm", jobs+"/"), exitUsage, "is not a job's prefix")
	assertCleanFailure(t, sluice(t, nil, "jobs", "gc", jobs), exitUsage, "--older-than")
}
