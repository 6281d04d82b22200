package fanout_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/store"
)

// goroutines is an Executor whose workers are goroutines of this process
// running RunTask, enough for an example; sluice's workers are processes
// (Local, Kubernetes, Slurm), which a task's failure cannot take down
// with the driver.
type goroutines struct {
	env   fanout.Env
	exits chan fanout.Exit

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newGoroutines(env fanout.Env) *goroutines {
	ctx, cancel := context.WithCancel(context.Background())
	return &goroutines{env: env, exits: make(chan fanout.Exit), ctx: ctx, cancel: cancel}
}

func (g *goroutines) Start(_ context.Context, t fanout.Task) error {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := fanout.RunTask(g.ctx, t, g.env)
		select {
		case g.exits <- fanout.Exit{Task: t, Worker: "goroutine", Err: err}:
		case <-g.ctx.Done(): // stopped: exits are no longer reported
		}
	}()
	return nil
}

func (g *goroutines) Exits() <-chan fanout.Exit { return g.exits }

func (g *goroutines) Stop() error {
	g.cancel()
	g.wg.Wait()
	return nil
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
		Executor: newGoroutines(fanout.Env{}),
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
