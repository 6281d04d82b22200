// Package s3test reaches the S3 server (MinIO) that ./scripts/test
// starts, for the tests that must run against a real one.
package s3test

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/sluice-data/sluice/internal/testenv"
)

// Endpoint is the test server's URL (SLUICE_TEST_S3_ENDPOINT). Without
// one the test is skipped, or fails under CI (CI=true), where a skip
// would hide that it never ran.
func Endpoint(t testing.TB) string {
	t.Helper()
	endpoint := os.Getenv("SLUICE_TEST_S3_ENDPOINT")
	if endpoint == "" {
		testenv.Unavailable(t, "SLUICE_TEST_S3_ENDPOINT not set; ./scripts/test runs these against MinIO")
	}
	return endpoint
}

// Bucket is Endpoint and the bucket the tests share on it
// (SLUICE_TEST_S3_BUCKET, sluice-test by default), made if missing.
func Bucket(t testing.TB) (endpoint, bucket string) {
	t.Helper()
	endpoint = Endpoint(t)
	bucket = os.Getenv("SLUICE_TEST_S3_BUCKET")
	if bucket == "" {
		bucket = "sluice-test"
	}
	EnsureBucket(t, endpoint, bucket)
	return endpoint, bucket
}

// EnsureBucket makes bucket on endpoint unless it is there, with the
// credentials of the environment.
func EnsureBucket(t testing.TB, endpoint, bucket string) {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true, HTTPClient: &http.Client{Transport: tr},
		Credentials: credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), "")})
	if _, err := c.HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: &bucket}); err != nil {
		if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
			t.Fatalf("create bucket %s: %v", bucket, err)
		}
	}
}
