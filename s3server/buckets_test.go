package s3server_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Bucket operations answer as S3 does, and a refused one changes nothing.
func TestBucketOperations(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	c := f.client
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(f.dir, name))
		return err == nil
	}
	for _, tc := range []struct {
		name, ownership, code string
	}{
		{"own-enforced", "BucketOwnerEnforced", ""},
		{"own-writer", "ObjectWriter", "NotImplemented"}, // needs ACLs
		{"own-bogus", "bogus", "InvalidArgument"},
	} {
		_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(tc.name), ObjectOwnership: types.ObjectOwnership(tc.ownership)})
		if apiCode(err) != tc.code || tc.code == "" && err != nil {
			t.Errorf("create with ownership %s: %v, want %q", tc.ownership, err, tc.code)
		}
		if exists(tc.name) != (tc.code == "") {
			t.Errorf("create with ownership %s: bucket exists %v", tc.ownership, exists(tc.name))
		}
	}
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("own-enforced")})
	if apiCode(err) != "BucketAlreadyOwnedByYou" {
		t.Errorf("create again: %v", err)
	}
	for _, name := range []string{"aa", "Upper", "bucket-%", "my-bucket."} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); apiCode(err) != "InvalidBucketName" {
			t.Errorf("create %q: %v", name, err)
		}
	}
	// us-east-1 is never named as a constraint.
	_, err = c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("east"),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: "us-east-1"}})
	if apiCode(err) != "InvalidLocationConstraint" || exists("east") {
		t.Errorf("create with constraint us-east-1: %v", err)
	}

	f.put(t, "k", []byte("x")) // in f's bucket
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("bkt")})
	if apiCode(err) != "BucketNotEmpty" || !exists("bkt") {
		t.Errorf("delete a bucket with an object: %v", err)
	}
	for _, name := range []string{"nope-missing"} {
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); apiCode(err) != "NoSuchBucket" {
			t.Errorf("delete missing: %v", err)
		}
		if _, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(name)}); apiCode(err) != "NoSuchBucket" {
			t.Errorf("location of missing: %v", err)
		}
		if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); err == nil {
			t.Errorf("HEAD of a missing bucket succeeds")
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("own-enforced")}); err != nil || exists("own-enforced") {
		t.Errorf("delete an empty bucket: %v", err)
	}
}

// ListMultipartUploads groups by delimiter, pages by key and upload-id
// markers, and names each upload's checksum; ListParts names the parts'.
func TestListUploadsAndParts(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	c := f.client
	ids := map[string]string{}
	for _, key := range []string{"a/1", "a/2", "b", "c/x/y", "d"} {
		in := &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(key)}
		if key == "b" {
			in.ChecksumAlgorithm = types.ChecksumAlgorithmSha256
		}
		out, err := c.CreateMultipartUpload(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		ids[key] = aws.ToString(out.UploadId)
	}
	list := func(in *s3.ListMultipartUploadsInput) *s3.ListMultipartUploadsOutput {
		t.Helper()
		in.Bucket = aws.String("bkt")
		out, err := c.ListMultipartUploads(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	names := func(out *s3.ListMultipartUploadsOutput) (keys, prefixes []string) {
		for _, u := range out.Uploads {
			keys = append(keys, aws.ToString(u.Key))
		}
		for _, p := range out.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(p.Prefix))
		}
		return keys, prefixes
	}
	out := list(&s3.ListMultipartUploadsInput{Delimiter: aws.String("/"), MaxUploads: aws.Int32(2)})
	keys, pre := names(out)
	// In key order: the prefix a/ (two uploads), then b.
	if len(keys) != 1 || keys[0] != "b" || len(pre) != 1 || pre[0] != "a/" || !aws.ToBool(out.IsTruncated) ||
		aws.ToString(out.NextKeyMarker) != "b" || aws.ToString(out.NextUploadIdMarker) != ids["b"] {
		t.Fatalf("first page: uploads %v, prefixes %v, truncated %v, next %s %s", keys, pre, aws.ToBool(out.IsTruncated),
			aws.ToString(out.NextKeyMarker), aws.ToString(out.NextUploadIdMarker))
	}
	out = list(&s3.ListMultipartUploadsInput{Delimiter: aws.String("/"), KeyMarker: out.NextKeyMarker, UploadIdMarker: out.NextUploadIdMarker})
	keys, pre = names(out)
	if len(keys) != 1 || keys[0] != "d" || len(pre) != 1 || pre[0] != "c/" || aws.ToBool(out.IsTruncated) {
		t.Errorf("second page: uploads %v, prefixes %v", keys, pre)
	}
	all := list(&s3.ListMultipartUploadsInput{})
	for _, u := range all.Uploads {
		want := types.ChecksumAlgorithm("")
		if aws.ToString(u.Key) == "b" {
			want = types.ChecksumAlgorithmSha256
		}
		if u.ChecksumAlgorithm != want || aws.ToString(u.UploadId) != ids[aws.ToString(u.Key)] {
			t.Errorf("upload %s: algorithm %q, id %s", aws.ToString(u.Key), u.ChecksumAlgorithm, aws.ToString(u.UploadId))
		}
	}
	if _, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), KeyMarker: aws.String("a/1"),
		UploadIdMarker: aws.String("not-an-upload")}); apiCode(err) != "InvalidArgument" {
		t.Errorf("unknown upload-id-marker: %v", err)
	}
	if _, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt"), MaxUploads: aws.Int32(-1)}); apiCode(err) != "InvalidArgument" {
		t.Errorf("negative max-uploads: %v", err)
	}

	part := []byte("part body")
	up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("b"), UploadId: aws.String(ids["b"]),
		PartNumber: aws.Int32(1), Body: bytes.NewReader(part), ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	if err != nil {
		t.Fatal(err)
	}
	parts, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("bkt"), Key: aws.String("b"), UploadId: aws.String(ids["b"])})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts.Parts) != 1 || aws.ToString(parts.Parts[0].ChecksumSHA256) != aws.ToString(up.ChecksumSHA256) || aws.ToString(up.ChecksumSHA256) == "" ||
		parts.ChecksumAlgorithm != types.ChecksumAlgorithmSha256 || aws.ToInt64(parts.Parts[0].Size) != int64(len(part)) {
		t.Errorf("parts: %+v, algorithm %q", parts.Parts, parts.ChecksumAlgorithm)
	}
	if _, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("bkt"), Key: aws.String("d"), UploadId: aws.String(ids["b"])}); apiCode(err) != "NoSuchUpload" {
		t.Errorf("parts of another key's upload: %v", err)
	}
}
