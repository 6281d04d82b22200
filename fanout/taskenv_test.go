package fanout

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestTaskFromEnv(t *testing.T) {
	unset := func() {
		for _, name := range []string{"JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID", "SLUICE_ATTEMPT", EnvDriverFiles} {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	for _, c := range []struct {
		env   map[string]string
		index int
		want  Task
		err   string
	}{
		{map[string]string{"JOB_COMPLETION_INDEX": "3", "SLUICE_ATTEMPT": "a2"}, -1, Task{Spec: "s", Phase: 1, Index: 3, Attempt: "a2"}, ""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": " 7\n"}, -1, Task{Spec: "s", Phase: 1, Index: 7}, ""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "2", EnvDriverFiles: "/a/credentials-1:/b"}, -1, Task{Spec: "s", Phase: 1, Index: 2, DriverFiles: []string{"/a/credentials-1", "/b"}}, ""},
		// Kubernetes' variable first; an index given wins over both.
		{map[string]string{"JOB_COMPLETION_INDEX": "1", "SLURM_ARRAY_TASK_ID": "2"}, -1, Task{Spec: "s", Phase: 1, Index: 1}, ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "1"}, 5, Task{Spec: "s", Phase: 1, Index: 5}, ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "-1"}, -1, Task{}, `JOB_COMPLETION_INDEX="-1" is not a task index`},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "x"}, -1, Task{}, `SLURM_ARRAY_TASK_ID="x" is not a task index`},
		{nil, -1, Task{}, "no task index: set JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID"},
	} {
		unset()
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		got, err := TaskFromEnv("s", 1, c.index)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: %v, want an error saying %q", c.env, err, c.err)
		case c.err == "" && (err != nil || got.Spec != c.want.Spec || got.Phase != c.want.Phase || got.Index != c.want.Index || got.Attempt != c.want.Attempt || !slices.Equal(got.DriverFiles, c.want.DriverFiles)):
			t.Errorf("%v, index %d: %+v, %v; want %+v", c.env, c.index, got, err, c.want)
		}
	}
}
