package gcs_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/sluice-data/sluice/store"
	_ "github.com/sluice-data/sluice/store/gcs" // registers gs://
)

// Importing the package is all a program does to read and write gs://
// URLs through package store. Here the bucket is fake-gcs-server's, in
// this process on 127.0.0.1, which STORAGE_EMULATOR_HOST points the SDK
// at; without it the SDK takes Google's default credentials.
func Example() {
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{Scheme: "http", Host: "127.0.0.1", Writer: io.Discard})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	srv.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "demo"})
	host, hadHost := os.LookupEnv("STORAGE_EMULATOR_HOST")
	os.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL(), "http://"))
	defer func() {
		if hadHost {
			os.Setenv("STORAGE_EMULATOR_HOST", host)
		} else {
			os.Unsetenv("STORAGE_EMULATOR_HOST")
		}
	}()

	ctx := context.Background()
	st, key, err := store.Open(ctx, "gs://demo/logs/", store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	fmt.Printf("store %s, key %q\n", st.URL(""), key)
	for _, name := range []string{"b.txt", "a.txt"} {
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
	// Output:
	// store gs://demo/, key "logs/"
	// logs/a.txt 12
	// logs/b.txt 12
	// bytes 7-11 of logs/a.txt: "a.txt"
}
