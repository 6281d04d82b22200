package gen_test

import (
	"context"
	"fmt"

	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/store"
)

func ExampleLineitem() {
	st := store.New(store.NewMemDriver(), "mem://example/")
	res, err := gen.Lineitem(context.Background(), st, "lineitem", gen.Options{Rows: 10_001, Files: 2, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(res.Files), "files,", res.Rows, "rows")
	for _, f := range res.Files {
		fmt.Println(f.Key, f.Rows)
	}
	// Output:
	// 2 files, 10001 rows
	// lineitem/part-00000.parquet 5001
	// lineitem/part-00001.parquet 5000
}

func ExampleTPCH() {
	st := store.New(store.NewMemDriver(), "mem://example/")
	tables, err := gen.TPCH(context.Background(), st, "tpch", gen.TPCHOptions{SF: 0.001, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tables {
		fmt.Println(t.Table, t.Rows, t.Files[0].Key)
	}
	// Output:
	// region 5 tpch/region/part-00000.parquet
	// nation 25 tpch/nation/part-00000.parquet
	// supplier 10 tpch/supplier/part-00000.parquet
	// customer 150 tpch/customer/part-00000.parquet
	// part 200 tpch/part/part-00000.parquet
	// partsupp 800 tpch/partsupp/part-00000.parquet
	// orders 1500 tpch/orders/part-00000.parquet
	// lineitem 5880 tpch/lineitem/part-00000.parquet
}
