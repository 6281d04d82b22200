package bench_test

import (
	"context"
	"fmt"
	"os"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

func ExampleParseSize() {
	for _, s := range []string{"16MiB", "500KB", "1.5GiB", "0.5B"} {
		n, err := bench.ParseSize(s)
		fmt.Println(n, err)
	}
	// Output:
	// 16777216 <nil>
	// 500000 <nil>
	// 1610612736 <nil>
	// 0 bad size "0.5B": not a whole number of bytes
}

// A short bench under the s3 link profile, printed as one table.
func ExampleRun() {
	p, _ := sim.Parse("s3")
	st := store.New(sim.Wrap(store.NewMemDriver(), p), "mem://example/")
	res, err := bench.Run(context.Background(), st, "", bench.Config{
		Sizes: []int64{4 << 20}, Concurrency: []int{1, 8}, Objects: 8,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	bench.WriteTable(os.Stdout, res.Summaries, bench.Narrow)
}

// The scale model: 2,000 workers that each read 40 MiB/s in 8 MiB GETs
// (5 a second), all under one prefix or spread over 2.
func ExamplePredict() {
	ms := []bench.Measured{{Kind: bench.Get, WorkerMiBps: 40, WorkerReqps: 5}}
	for _, prefixes := range []int{1, 2} {
		p := bench.Predict(ms, bench.PredictConfig{Workers: []int{2000}, Prefixes: prefixes})[0]
		fmt.Printf("%d prefix(es): %.0f GETs/s each, limit binds: %v, %.0f MiB/s, needs %d prefixes, binds from %d workers\n",
			prefixes, p.PrefixReqps, p.Binds, p.MiBps, p.PrefixesNeeded, p.BindsFrom)
	}
	// Output:
	// 1 prefix(es): 10000 GETs/s each, limit binds: true, 44000 MiB/s, needs 2 prefixes, binds from 1101 workers
	// 2 prefix(es): 5000 GETs/s each, limit binds: false, 80000 MiB/s, needs 2 prefixes, binds from 2201 workers
}
