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

// A short bench under the s3 link profile, printed as one table: what
// sluice demo shows.
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
	bench.WriteTable(os.Stdout, res.Summaries)
}
