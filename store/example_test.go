package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/sluice-data/sluice/store"
)

// Open a store by URL, write objects, list a prefix, read a byte range,
// and tell a missing object by its error's kind. The same calls work on
// s3:// and file:// URLs.
func ExampleOpen() {
	ctx := context.Background()
	// Opens of mem://name with the same MemBuckets see the same objects.
	buckets := store.NewMemBuckets()
	st, key, err := store.Open(ctx, "mem://demo/logs/", store.Options{MemBuckets: buckets})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	fmt.Printf("store %s, key %q\n", st.URL(""), key)

	for _, name := range []string{"b.txt", "a.txt", "sub/c.txt"} {
		if _, err := st.Put(ctx, store.Join(key, name), strings.NewReader("hello, "+name), store.WriteOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	objs, err := st.List(ctx, key)
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range objs {
		fmt.Println(o.Key, o.Size)
	}

	rc, _, err := st.ReadRange(ctx, "logs/a.txt", store.Range{Off: 7, Len: 5}, store.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	fmt.Printf("bytes 7-11 of logs/a.txt: %q\n", b)

	_, err = st.Stat(ctx, "logs/missing.txt")
	fmt.Println("missing:", errors.Is(err, store.ErrNotFound))
	// Output:
	// store mem://demo/, key "logs/"
	// logs/a.txt 12
	// logs/b.txt 12
	// logs/sub/c.txt 16
	// bytes 7-11 of logs/a.txt: "a.txt"
	// missing: true
}
