package fanout_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/store"
	"golang.org/x/sync/errgroup"
)

// goroutines is an Executor whose workers are goroutines of this process
// running RunTask, each task once, enough for an example; sluice's
// workers are processes (Local, and the executors of fanout/slurm and
// fanout/kubernetes), which retry a task and which its failure cannot
// take down with the driver.
type goroutines struct{ env fanout.Env }

func (g goroutines) RunPhase(ctx context.Context, r fanout.PhaseRun) error {
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(r.Workers)
	for i := range r.Tasks {
		eg.Go(func() error {
			return fanout.RunTask(ctx, fanout.Task{Spec: r.Spec, SpecSum: r.SpecSum, Phase: r.Phase, Index: i, Attempt: "a1"}, g.env)
		})
	}
	return eg.Wait()
}

// Fan a pipeline out over workers: map tasks count each piece of the
// dataset, the driver folds their counts in dataset order and runs the
// sink. The result is exec.Run's, to the bit.
func ExampleRun() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "fanout-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, _, err := store.Open(ctx, dir, store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_, err = gen.Taxi(ctx, st, "taxi", gen.Options{Rows: 12_000, Files: 4, Seed: 1})
	st.Close()
	if err != nil {
		log.Fatal(err)
	}

	// The job's spec carries the plan; workers compile it themselves.
	p, err := plan.Parse("scan " + dir + "/taxi/ | count-by payment_type | to-csv")
	if err != nil {
		log.Fatal(err)
	}
	err = fanout.Run(ctx, p, fanout.Options{
		Workers:  2,
		Store:    dir + "/jobs/", // where the job's spec, outputs and manifests live
		Executor: goroutines{},
		Env:      exec.Env{Stdout: os.Stdout}, // where the driver's to-csv writes
		ScanStats: func(tasks int, read fanout.ScanCounts) {
			fmt.Println("map tasks:", tasks, "rows read:", read.Rows)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// map tasks: 4 rows read: 12000
	// payment_type,count
	// card,8934
	// cash,2480
	// dispute,219
	// no charge,367
}
