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
