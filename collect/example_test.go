package collect_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/scan"
)

// Three parts produced at once, the later ones faster, delivered in
// dataset order: the consumer sees part 0's batches first, while the
// others wait in a bounded window.
func ExampleCollect() {
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	produce := func(ctx context.Context, part int, emit func(scan.Batch) error) error {
		select { // part 0 is the straggler
		case <-time.After(time.Duration(3-part) * 10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
		for i := range 2 {
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.Append(int64(10*part + i))
			col := b.NewArray()
			b.Release()
			rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
			col.Release()
			// emit takes the batch, whatever it returns.
			if err := emit(scan.Batch{RecordBatch: rec, Pos: scan.Position{Batch: i, Last: i == 1}}); err != nil {
				return err
			}
		}
		return nil
	}

	s := collect.Collect(context.Background(), 3, produce, collect.Options{Order: collect.Dataset, Parallel: 3})
	defer s.Close()
	for s.Next() {
		b := s.Batch()
		fmt.Printf("part %d batch %d: v=%d\n", b.Pos.Part, b.Pos.Batch, b.Column(0).(*array.Int64).Value(0))
		b.Release()
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// part 0 batch 0: v=0
	// part 0 batch 1: v=1
	// part 1 batch 0: v=10
	// part 1 batch 1: v=11
	// part 2 batch 0: v=20
	// part 2 batch 1: v=21
}
