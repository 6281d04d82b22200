package sim_test

import (
	"context"
	"fmt"

	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

func ExampleParse() {
	p, err := sim.Parse("s3,link=200MiB/s")
	if err != nil {
		panic(err)
	}
	fmt.Println(p.TTFB, p.TTFBP99, p.Stream/sim.MiB, p.Link/sim.MiB)
	fmt.Println(p)

	_, err = sim.Parse("tttfb=5ms")
	fmt.Println(err)
	// Output:
	// 15ms 80ms 90 200
	// s3,link=200MiB/s
	// sim: unknown field "tttfb" (want ttfb, p99, stream, link, slowdown, reset, stall, reqlimit, prefixdepth, reqshare, seed)
}

func ExampleWrapOption() {
	p, _ := sim.Parse("ttfb=1ms,stream=64MiB/s")
	s, key, err := store.Open(context.Background(), "mem://example/data.bin", store.Options{Wrap: sim.WrapOption(p)})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	_, _ = s.Stat(context.Background(), key) // waits about 1ms, as a remote store would
	none, _ := sim.Parse("none")
	fmt.Println(sim.WrapOption(none) == nil)
	// Output: true
}
