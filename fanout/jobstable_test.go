package fanout

import (
	"strings"
	"testing"
	"time"
)

func TestWriteJobs(t *testing.T) {
	now := time.Now()
	var b strings.Builder
	err := WriteJobs(&b, []JobInfo{
		{URL: "s3://b/jobs/job-000000000001/", Created: now.Add(-90 * time.Second), Objects: 3, Bytes: 3 << 20, Phases: 2, Committed: 1},
		{URL: "s3://b/jobs/job-000000000002/", Created: now, Objects: 1, Bytes: 10},
	}, now)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if err != nil || len(lines) != 3 || !strings.Contains(lines[0], "phases") ||
		!strings.Contains(lines[1], "1m30s") || !strings.Contains(lines[1], "1/2") || !strings.Contains(lines[1], "3.0 MiB") ||
		!strings.Contains(lines[2], " ?") || !strings.HasSuffix(strings.TrimSpace(lines[2]), "job-000000000002/") {
		t.Errorf("%v:\n%s", err, b.String())
	}
}
