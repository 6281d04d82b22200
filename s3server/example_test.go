package s3server_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/sluice-data/sluice/s3server"
	"github.com/sluice-data/sluice/store"
)

// Serve a directory over S3 and use it through the s3:// driver.
func ExampleStart() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "s3server-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	srv, err := s3server.Start(ctx, dir, "127.0.0.1:0", s3server.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	if err := srv.CreateBucket("demo"); err != nil {
		panic(err)
	}

	st, _, err := store.Open(ctx, "s3://demo/", store.Options{
		Endpoint: srv.Endpoint, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey,
	})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	if _, err := st.Put(ctx, "greetings/hello.txt", strings.NewReader("hello from a directory"), store.WriteOptions{}); err != nil {
		panic(err)
	}
	b, err := st.ReadAll(ctx, "greetings/hello.txt")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))

	// The object is a plain file in the served directory.
	b, _ = os.ReadFile(dir + "/demo/greetings/hello.txt")
	fmt.Println(string(b))
	// Output:
	// hello from a directory
	// hello from a directory
}
