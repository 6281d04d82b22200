package fanout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TaskFromEnv is the task a worker process was started for: the job's
// spec and phase as given; its index as given or, when index < 0, from the
// environment the executors set (JOB_COMPLETION_INDEX for a Kubernetes
// Indexed Job and the local executor, SLURM_ARRAY_TASK_ID for a Slurm
// array job); and its attempt's label from SLUICE_ATTEMPT, when set.
func TaskFromEnv(spec string, phase, index int) (Task, error) {
	if index < 0 {
		n, err := TaskIndexFromEnv()
		if err != nil {
			return Task{}, err
		}
		index = n
	}
	t := Task{Spec: spec, Phase: phase, Index: index, Attempt: os.Getenv("SLUICE_ATTEMPT")}
	if v := os.Getenv(EnvDriverFiles); v != "" {
		t.DriverFiles = filepath.SplitList(v)
	}
	return t, nil
}

// EnvDriverFiles names the variable in which a driver lists (as PATH
// lists directories) the files on the workers' machines it removes when
// the job ends, such as the Slurm workers' credentials: a worker that
// finds its driver gone (see lease.go) removes them, so a driver killed
// with SIGKILL leaves no secret behind once its workers stop.
const EnvDriverFiles = "SLUICE_DRIVER_FILES"

// TaskIndexFromEnv is a worker's task index as the executors give it, in
// JOB_COMPLETION_INDEX or else SLURM_ARRAY_TASK_ID (see TaskFromEnv).
func TaskIndexFromEnv() (int, error) {
	for _, name := range []string{"JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"} {
		v, ok := os.LookupEnv(name)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q is not a task index", name, v)
		}
		return n, nil
	}
	return 0, errors.New("no task index: set JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID, or give --index")
}
