package transfer_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluice-data/sluice/s3server"
	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/transfer"
)

// TestUploads starts multipart uploads on an embedded S3 endpoint and
// leaves them pending, as a killed writer would: Uploads lists them under
// a prefix, those started before a time, and AbortUpload removes one,
// twice without error.
func TestUploads(t *testing.T) {
	ctx := t.Context()
	srv := embeddedBucket(t, "bkt")
	client := s3.New(s3.Options{Region: srv.Region, BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")})
	start := func(key string) string {
		out, err := client.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		return *out.UploadId
	}
	idA := start("out/a.bin")
	start("other/c.bin")
	// Initiation times are kept to the second: the server's clock is the
	// input, and no fake clock reaches it.
	time.Sleep(1100 * time.Millisecond)
	between := time.Now()
	time.Sleep(1100 * time.Millisecond)
	start("out/b.bin")

	st, _, err := store.Open(ctx, "s3://bkt/", store.Options{Endpoint: srv.Endpoint, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, Attempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys := func(ups []store.Upload) []string {
		var k []string
		for _, u := range ups {
			k = append(k, u.Key)
		}
		return k
	}
	ups, err := transfer.Uploads(ctx, st, "out/", time.Time{})
	if err != nil || !slices.Equal(keys(ups), []string{"out/a.bin", "out/b.bin"}) {
		t.Fatalf("Uploads(out/) = %v, %v", keys(ups), err)
	}
	old, err := transfer.Uploads(ctx, st, "out/", between)
	if err != nil || !slices.Equal(keys(old), []string{"out/a.bin"}) || old[0].ID != idA {
		t.Fatalf("Uploads(out/, before) = %+v, %v", old, err)
	}
	for range 2 { // the second finds it gone: no error
		if err := transfer.AbortUpload(ctx, st, old[0]); err != nil {
			t.Fatal(err)
		}
	}
	ups, err = transfer.Uploads(ctx, st, "", time.Time{})
	if err != nil || !slices.Equal(keys(ups), []string{"other/c.bin", "out/b.bin"}) {
		t.Fatalf("after the abort: %v, %v", keys(ups), err)
	}
}

// embeddedBucket starts an embedded S3 endpoint, closed when the test
// ends, with the bucket named.
func embeddedBucket(t *testing.T, bucket string) *s3server.Server {
	t.Helper()
	srv, err := s3server.Start(t.Context(), t.TempDir(), "127.0.0.1:0", s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	return srv
}
