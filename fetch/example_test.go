package fetch_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/sluice-data/sluice/fetch"
	"github.com/sluice-data/sluice/store"
)

// Two units over one object: the consumer reads each through ReadAt (as a
// Parquet reader reads a column chunk) or WriteTo, then releases it.
func Example() {
	ctx := context.Background()
	st := store.New(store.NewMemDriver(), "mem://example/")
	if _, err := st.Put(ctx, "greeting", strings.NewReader("hello, wide world"), store.WriteOptions{}); err != nil {
		log.Fatal(err)
	}

	f := fetch.New(st, fetch.Options{Memory: 64 << 20})
	plan := f.Plan(ctx, []fetch.Request{
		{Key: "greeting", Ranges: []store.Range{{Off: 0, Len: 5}, {Off: 12, Len: 5}}, Tag: "first and last words"},
		{Key: "greeting", Ranges: []store.Range{{Off: 7, Len: 4}}, Tag: "the middle"},
	})
	defer plan.Close()
	for {
		u, err := plan.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: ", u.Tag())
		if u.Index() == 0 {
			word := make([]byte, 5)
			if _, err := u.ReadAt(word, 12); err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%s\n", word)
		} else {
			if _, err := u.WriteTo(os.Stdout); err != nil {
				log.Fatal(err)
			}
			fmt.Println()
		}
		u.Release()
	}
	// Output:
	// first and last words: world
	// the middle: wide
}
