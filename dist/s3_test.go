package dist

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func ensureBucket(t *testing.T, endpoint, bucket string) {
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

type fetchRequest struct {
	key  string
	size int64
}
