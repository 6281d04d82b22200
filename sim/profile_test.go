package sim

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func TestAttemptSeed(t *testing.T) {
	seen := map[uint64]string{}
	for _, c := range []struct {
		seed        uint64
		phase, task int
		attempt     string
	}{{7, 0, 0, "a1"}, {7, 0, 0, "a2"}, {7, 0, 1, "a1"}, {7, 1, 0, "a1"}, {8, 0, 0, "a1"}, {7, 0, 0, "slurm-12-0"}} {
		s := AttemptSeed(c.seed, c.phase, c.task, c.attempt)
		name := fmt.Sprint(c)
		if other, ok := seen[s]; ok {
			t.Errorf("%s and %s draw the same seed", name, other)
		}
		seen[s] = name
		if AttemptSeed(c.seed, c.phase, c.task, c.attempt) != s {
			t.Errorf("%s: another seed the second time", name)
		}
	}
}

func TestShareRequests(t *testing.T) {
	p, err := Parse("reqlimit=3500:5500")
	if err != nil {
		t.Fatal(err)
	}
	file, remove, err := p.ShareRequests()
	if err != nil || file == "" || p.ReqShare != file {
		t.Fatalf("ShareRequests: %q, %v; ReqShare %q", file, err, p.ReqShare)
	}
	if _, err := os.Stat(file); err != nil {
		t.Error(err)
	}
	// Shared already, or no limit to share: nothing to do.
	for _, q := range []Profile{p, {TTFB: time.Millisecond}} {
		if f, _, err := q.ShareRequests(); f != "" || err != nil {
			t.Errorf("%v: %q, %v", q, f, err)
		}
	}
	remove()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("remove left %s: %v", file, err)
	}
}
