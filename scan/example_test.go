package scan_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
)

// Scan two columns of the rows of a small generated lineitem dataset that
// pass a filter. Batches arrive in the order they are decoded; each says
// where in the dataset it belongs, and the consumer releases it.
func Example() {
	ctx := context.Background()
	st := store.New(store.NewMemDriver(), "mem://example/")
	if _, err := gen.Lineitem(ctx, st, "lineitem", gen.Options{Rows: 20_000, Files: 2, Seed: 1}); err != nil {
		log.Fatal(err)
	}

	ds, err := scan.Open(ctx, st, "lineitem/", scan.Options{
		Columns: []string{"l_orderkey", "l_shipmode"},
		Filter:  "l_orderkey < 5000 and l_shipmode = 'AIR'",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("schema:", ds.Schema().Field(0).Name, ds.Schema().Field(1).Name)
	fmt.Println("files:", len(ds.Files()), "row groups to read:", ds.RowGroups())

	s := ds.Scan(ctx)
	defer s.Close()
	var rows int64
	var places []string
	for s.Next() {
		b := s.Batch()
		rows += b.NumRows()
		places = append(places, fmt.Sprintf("%s row group %d batch %d", b.Pos.Key, b.Pos.RowGroup, b.Pos.Batch))
		b.Release()
	}
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	slices.Sort(places) // dataset order
	fmt.Println("rows:", rows)
	for _, p := range places {
		fmt.Println(p)
	}
	st2 := s.Stats()
	fmt.Println("pruned by statistics:", st2.RowGroupsPruned, "row groups")
	// Output:
	// schema: l_orderkey l_shipmode
	// files: 2 row groups to read: 3
	// rows: 677
	// lineitem/part-00000.parquet row group 0 batch 0
	// lineitem/part-00000.parquet row group 1 batch 0
	// lineitem/part-00000.parquet row group 2 batch 0
	// pruned by statistics: 5 row groups
}

// Open a dataset by URL and read it as an arrow-go RecordReader, in
// dataset order. The reader owns each batch until the next call of Next.
func ExampleOpenURL() {
	ctx := context.Background()
	// mem:// buckets live in a MemBuckets; an s3:// URL or a path needs none.
	buckets := store.NewMemBuckets()
	st, _, err := store.Open(ctx, "mem://example/", store.Options{MemBuckets: buckets})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := gen.Lineitem(ctx, st, "lineitem", gen.Options{Rows: 3000, Files: 3, RowGroupRows: 500, Seed: 1}); err != nil {
		log.Fatal(err)
	}

	ds, err := scan.OpenURL(ctx, "mem://example/lineitem/part-0000[01].parquet", scan.Options{
		Columns:      []string{"l_orderkey"},
		StoreOptions: store.Options{MemBuckets: buckets},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer ds.Close()
	r := ds.Reader(ctx)
	defer r.Release()
	for r.Next() {
		b := r.RecordBatch()
		orders := b.Column(0)
		fmt.Println(b.NumRows(), "rows, orders", orders.ValueStr(0), "to", orders.ValueStr(orders.Len()-1))
	}
	if err := r.Err(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 500 rows, orders 1 to 487
	// 500 rows, orders 512 to 999
	// 500 rows, orders 1024 to 1505
	// 500 rows, orders 1505 to 2018
}
