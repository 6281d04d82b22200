package transfer_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

// Copy what a URL names (here a glob) from one store to another, then
// cat what arrived. The same calls copy between s3://, gs://, az:// and
// file:// URLs.
func ExampleCopy() {
	ctx := context.Background()
	buckets := store.NewMemBuckets()
	open := func(ctx context.Context, url string) (*store.Store, string, error) {
		return store.Open(ctx, url, store.Options{MemBuckets: buckets})
	}

	src, _, err := open(ctx, "mem://src/")
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	for _, name := range []string{"logs/2024/a.log", "logs/2024/b.log", "logs/2024/notes.txt"} {
		if _, err := src.Put(ctx, name, strings.NewReader("line of "+name+"\n"), store.WriteOptions{}); err != nil {
			log.Fatal(err)
		}
	}

	from, err := transfer.Resolve(ctx, open, "mem://src/logs/*/*.log")
	if err != nil {
		log.Fatal(err)
	}
	dst, dstKey, err := open(ctx, "mem://dst/backup/")
	if err != nil {
		log.Fatal(err)
	}
	defer dst.Close()
	jobs := transfer.Jobs(from.Objects, dstKey, true)
	for _, j := range jobs {
		fmt.Println(j.Src.Key, "->", j.Dst)
	}
	if _, err := transfer.Copy(ctx, from.Store, dst, jobs, transfer.Options{}); err != nil {
		log.Fatal(err)
	}
	from.Store.Close()

	arrived, err := transfer.Resolve(ctx, open, "mem://dst/backup/")
	if err != nil {
		log.Fatal(err)
	}
	defer arrived.Store.Close()
	if _, err := transfer.Cat(ctx, os.Stdout, arrived.Store, arrived.List, transfer.Options{}); err != nil {
		log.Fatal(err)
	}
	// Output:
	// logs/2024/a.log -> backup/2024/a.log
	// logs/2024/b.log -> backup/2024/b.log
	// line of logs/2024/a.log
	// line of logs/2024/b.log
}
