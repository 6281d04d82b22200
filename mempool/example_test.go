package mempool_test

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/sluice-data/sluice/mempool"
)

// Build one batch after another from a Pool: the second array's values
// land in the memory the first released, rather than in fresh pages.
func ExamplePool() {
	pool := mempool.New(64 << 20)
	build := func(n int) *array.Int64 {
		b := array.NewInt64Builder(pool)
		defer b.Release()
		b.Reserve(n)
		for i := range n {
			b.UnsafeAppend(int64(i))
		}
		return b.NewInt64Array()
	}

	first := build(10_000)
	addr := &first.Int64Values()[0]
	first.Release() // its buffers go back to the pool

	second := build(10_000)
	defer second.Release()
	fmt.Println("values:", second.Len(), "last", second.Value(second.Len()-1))
	fmt.Println("reused the first array's memory:", &second.Int64Values()[0] == addr)
	// Output:
	// values: 10000 last 9999
	// reused the first array's memory: true
}
