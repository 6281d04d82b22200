package flightsvc_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/flightsvc"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/store"
)

// Serve the datasets of a store over Arrow Flight on a loopback port and
// fetch one back, its endpoints in parallel, in dataset order.
func ExampleGet() {
	ctx := context.Background()
	st := store.New(store.NewMemDriver(), "mem://flight/")
	if _, err := gen.Lineitem(ctx, st, "lineitem", gen.Options{Rows: 6000, Files: 3, RowGroupRows: 2000, Seed: 1}); err != nil {
		log.Fatal(err)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := flightsvc.NewServer([]flightsvc.Root{{Store: st}}, flightsvc.ServerOptions{})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	defer func() {
		srv.Shutdown(time.Second)
		<-done
	}()

	r, err := flightsvc.Get(ctx, lis.Addr().String(), "lineitem/", flightsvc.GetOptions{
		Columns: []string{"l_orderkey", "l_quantity"},
		Filter:  "l_quantity >= 49",
		Order:   collect.Dataset,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	fmt.Println("endpoints:", len(r.Info.Endpoint), "columns:", r.Schema.Field(0).Name, r.Schema.Field(1).Name)
	var rows int64
	for r.Next() {
		b := r.Batch()
		fmt.Println(b.Pos, b.NumRows(), "rows")
		rows += b.NumRows()
		b.Release()
	}
	if err := r.Err(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("rows:", rows)
	// Output:
	// endpoints: 3 columns: l_orderkey l_quantity
	// part 0 file 0 row group 0 batch 0 79 rows
	// part 1 file 1 row group 0 batch 0 83 rows
	// part 2 file 2 row group 0 batch 0 85 rows
	// rows: 247
}
