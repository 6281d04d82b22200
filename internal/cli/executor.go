package cli

import (
	"errors"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/executors"
)

// executorOptions choose where a fanned-out run's workers run.
type executorOptions struct {
	executors.Options
}

// check refuses executor flags for a run in this process.
func (o *executorOptions) check(workers int) error {
	if workers == 0 && (o.Name != "local" || o.DryRun) {
		return usagef("--executor %s and --dry-run fan out: give --workers N", o.Name)
	}
	return nil
}

// executor makes the chosen executor, its workers running this binary
// (self) with args.
func (o *executorOptions) executor(self string, args []string) (fanout.Executor, error) {
	exe, err := executors.New(o.Options, self, args)
	return exe, executorError(err)
}

// executorError makes the executors' refusals of their options usage
// errors.
func executorError(err error) error {
	if errors.Is(err, executors.ErrInvalid) {
		return usageError{err}
	}
	return err
}
