package s3server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sluice-data/sluice/s3server"
)

// A server in one region refuses requests signed for another the way S3
// does, naming its region, so clients can discover it.
func TestRegion(t *testing.T) {
	ctx := context.Background()
	srv, err := s3server.Start(ctx, t.TempDir(), "", s3server.Options{Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.CreateBucket("regional"); err != nil {
		t.Fatal(err)
	}
	wrong := newClient(t, srv.Endpoint, srv.AccessKey, srv.SecretKey) // signs for us-east-1
	right := s3.New(wrong.Options(), func(o *s3.Options) { o.Region = "eu-west-1" })

	// A HEAD has no body: the region comes in x-amz-bucket-region.
	_, err = wrong.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("regional")})
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusBadRequest || re.Response.Header.Get("X-Amz-Bucket-Region") != "eu-west-1" {
		t.Fatalf("HEAD signed for us-east-1: %v", err)
	}
	// Other requests: 400 AuthorizationHeaderMalformed naming it.
	_, err = wrong.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("regional")})
	if apiCode(err) != "AuthorizationHeaderMalformed" || !strings.Contains(err.Error(), `expecting "eu-west-1"`) {
		t.Fatalf("list signed for us-east-1: %v", err)
	}
	// Nothing was done: the bucket is still empty for a right request.
	out, err := right.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("regional")})
	if err != nil || aws.ToString(out.BucketRegion) != "eu-west-1" {
		t.Fatalf("HEAD signed for eu-west-1: %v, region %q", err, aws.ToString(out.BucketRegion))
	}
	loc, err := right.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("regional")})
	if err != nil || loc.LocationConstraint != "eu-west-1" {
		t.Fatalf("location: %v, %q", err, loc.LocationConstraint)
	}
	// A bucket is made here only with this region's constraint, or none.
	for _, c := range []struct {
		region types.BucketLocationConstraint
		code   string
	}{{"us-west-2", "InvalidLocationConstraint"}, {"eu-west-1", ""}} {
		_, err := right.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("made-" + string(c.region)),
			CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: c.region}})
		if apiCode(err) != c.code || c.code == "" && err != nil {
			t.Errorf("create with constraint %s: %v, want %q", c.region, err, c.code)
		}
	}
	// A presigned URL for another region is refused too.
	pre, err := s3.NewPresignClient(wrong).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("regional"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(pre.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Amz-Bucket-Region") != "eu-west-1" {
		t.Errorf("presigned for us-east-1: %d, region %q", resp.StatusCode, resp.Header.Get("X-Amz-Bucket-Region"))
	}
	if env := strings.Join(srv.Env(), " "); !strings.Contains(env, "AWS_REGION=eu-west-1") {
		t.Errorf("Env: %s", env)
	}
}
