package cli

import (
	"context"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/mempool"
	"github.com/sluice-data/sluice/sim"
)

type workerOptions struct {
	phase   int
	index   int
	specSum string
}

func newWorkerCommand() *cobra.Command {
	opts := workerOptions{index: -1}
	cmd := &cobra.Command{
		Use:     "worker SPEC_URL",
		Short:   "Run one task of a fanned-out job (started by sluice run --workers)",
		Long:    helpText("worker"),
		Example: helpText("worker.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorker(cmd.Context(), opts, args[0])
		},
	}
	cmd.Flags().IntVar(&opts.phase, "phase", 0, "the phase of the job the task belongs to")
	cmd.Flags().IntVar(&opts.index, "index", -1, "the task's index (default: JOB_COMPLETION_INDEX, else SLURM_ARRAY_TASK_ID)")
	cmd.Flags().StringVar(&opts.specSum, "spec-sha256", "", "the SHA-256 of the spec its driver wrote: the worker runs no other")
	return cmd
}

func runWorker(ctx context.Context, opts workerOptions, spec string) error {
	t, err := fanout.TaskFromEnv(spec, opts.phase, opts.index)
	if err != nil {
		return usagef("worker: %v", err)
	}
	t.SpecSum = opts.specSum
	// Each attempt draws its own faults from --sim: one seed for all
	// would make a retry meet the faults that failed the attempt before.
	globals.profile.Seed = sim.AttemptSeed(globals.profile.Seed, t.Phase, t.Index, t.Attempt)
	stores := newStoreSet()
	defer stores.Close()
	xenv := stageEnv(strings.NewReader(""), io.Discard, io.Discard, stores)
	// A worker's Arrow buffers come from a mapped pool, outside the Go
	// heap, so the heap's limit is its own share: half the budget. A
	// limit of the whole budget (+64 MiB) let the collector keep 70 MiB
	// of freed heap besides the pool, and reducers past the budget.
	budget := func(m int64) (memory.Allocator, func()) {
		return mempool.NewMapped(max(m/4, 1)), boundHeap(max(m/2, 32<<20))
	}
	err = fanout.RunTask(ctx, t, fanout.Env{Exec: xenv, Open: stores.Open, Mem: mempool.NewMapped(0), Budget: budget})
	if err != nil {
		return stageError(err)
	}
	return nil
}
