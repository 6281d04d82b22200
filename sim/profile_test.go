package sim

import (
	"fmt"
	"testing"
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
