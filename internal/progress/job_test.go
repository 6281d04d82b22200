package progress

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/fanout"
)

// A bar a phase: each ends as a line of its own with its last counts,
// and the next phase starts a new one.
func TestJob(t *testing.T) {
	var b bytes.Buffer
	p := NewJob(&b)
	p.Update(fanout.Progress{Phase: fanout.PhaseMap, Tasks: 4, Running: 2})
	p.Update(fanout.Progress{Phase: fanout.PhaseMap, Tasks: 4, Done: 2, Running: 2, Failed: 1, RowsIn: 2000, BytesIn: 3 << 20, BytesOut: 1 << 20})
	p.Update(fanout.Progress{Phase: fanout.PhaseMap, Tasks: 4, Done: 4, Failed: 1, RowsIn: 4000, BytesIn: 6 << 20, BytesOut: 2 << 20})
	p.Update(fanout.Progress{Index: 1, Phase: fanout.PhaseReduce, Tasks: 2, Running: 2})
	p.Update(fanout.Progress{Index: 1, Phase: fanout.PhaseReduce, Tasks: 2, Done: 2, RowsIn: 4000, BytesIn: 2 << 20, BytesOut: 100})
	p.Close()
	out := b.String()
	for _, want := range []string{
		"phase 0 (map): 0 running, 1 failed attempts, 4000 rows, 6.0 MiB in (",
		"MiB/s), 2.0 MiB out",
		"4/4",
		"phase 1 (reduce): 0 running, 0 failed attempts, 4000 rows, 2.0 MiB in",
		"2/2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the display lacks %q:\n%q", want, out)
		}
	}
	if i, j := strings.LastIndex(out, "phase 0"), strings.Index(out, "phase 1"); i > j {
		t.Errorf("phase 0 drawn after phase 1 started:\n%q", out)
	}
}
