package s3server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Content-Type, the other stored headers and x-amz-meta-* are kept with
// the object, returned by HEAD and GET, carried by a copy unless it
// replaces them, and an object cannot be copied onto itself unchanged.
func TestMetadata(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	_, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("doc"), Body: strings.NewReader("{}"),
		ContentType: aws.String("application/json"), ContentDisposition: aws.String("attachment"), CacheControl: aws.String("no-cache"),
		Metadata: map[string]string{"Origin": "test", "n": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	check := func(key, ct string, meta map[string]string) {
		t.Helper()
		h, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(h.ContentType) != ct || len(h.Metadata) != len(meta) {
			t.Errorf("%s: content type %q, metadata %v", key, aws.ToString(h.ContentType), h.Metadata)
		}
		for k, v := range meta {
			if h.Metadata[k] != v {
				t.Errorf("%s: metadata %s = %q, want %q", key, k, h.Metadata[k], v)
			}
		}
	}
	check("doc", "application/json", map[string]string{"origin": "test", "n": "1"})
	_, out, err := f.get(t, "doc", "")
	if err != nil || aws.ToString(out.ContentDisposition) != "attachment" || aws.ToString(out.CacheControl) != "no-cache" || out.Metadata["origin"] != "test" {
		t.Errorf("get: %+v, %v", out, err)
	}
	if _, err := f.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("kept"), CopySource: aws.String("bkt/doc")}); err != nil {
		t.Fatal(err)
	}
	check("kept", "application/json", map[string]string{"origin": "test", "n": "1"})
	if _, err := f.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("replaced"), CopySource: aws.String("bkt/doc"),
		MetadataDirective: types.MetadataDirectiveReplace, ContentType: aws.String("text/plain"), Metadata: map[string]string{"new": "yes"}}); err != nil {
		t.Fatal(err)
	}
	check("replaced", "text/plain", map[string]string{"new": "yes"})
	_, err = f.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("doc"), CopySource: aws.String("bkt/doc")})
	if apiCode(err) != "InvalidRequest" {
		t.Errorf("copy onto itself unchanged: %v", err)
	}
	if _, err := f.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("doc"), CopySource: aws.String("bkt/doc"),
		MetadataDirective: types.MetadataDirectiveReplace, ContentType: aws.String("text/csv")}); err != nil {
		t.Fatal(err)
	}
	check("doc", "text/csv", nil)
	// Copy-source conditions.
	_, err = f.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("c2"), CopySource: aws.String("bkt/doc"), CopySourceIfMatch: aws.String(`"nope"`)})
	if apiCode(err) != "PreconditionFailed" {
		t.Errorf("copy with a failing source If-Match: %v", err)
	}
	_, err = f.client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String("c2"), CopySource: aws.String("bkt/doc"), CopySourceIfModifiedSince: aws.Time(time.Now().Add(time.Hour))})
	if apiCode(err) != "PreconditionFailed" {
		t.Errorf("copy with a failing source If-Modified-Since: %v", err)
	}
}

// Checksums of every algorithm are verified on the way in, stored, and
// returned when asked; a wrong one is refused and stores nothing.
func TestChecksums(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	data := []byte("checksummed content")
	for _, algo := range []types.ChecksumAlgorithm{types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c,
		types.ChecksumAlgorithmCrc64nvme, types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256} {
		key := "ck-" + string(algo)
		put, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: &key, Body: bytes.NewReader(data), ChecksumAlgorithm: algo})
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		// The SDK checks the checksum of the answer itself.
		out, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: &key, ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		b, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("%s: read %q, %v", algo, b, err)
		}
		got := map[types.ChecksumAlgorithm]*string{
			types.ChecksumAlgorithmCrc32: out.ChecksumCRC32, types.ChecksumAlgorithmCrc32c: out.ChecksumCRC32C,
			types.ChecksumAlgorithmCrc64nvme: out.ChecksumCRC64NVME, types.ChecksumAlgorithmSha1: out.ChecksumSHA1,
			types.ChecksumAlgorithmSha256: out.ChecksumSHA256,
		}[algo]
		sent := map[types.ChecksumAlgorithm]*string{
			types.ChecksumAlgorithmCrc32: put.ChecksumCRC32, types.ChecksumAlgorithmCrc32c: put.ChecksumCRC32C,
			types.ChecksumAlgorithmCrc64nvme: put.ChecksumCRC64NVME, types.ChecksumAlgorithmSha1: put.ChecksumSHA1,
			types.ChecksumAlgorithmSha256: put.ChecksumSHA256,
		}[algo]
		if aws.ToString(got) == "" || aws.ToString(got) != aws.ToString(sent) {
			t.Errorf("%s: put answered %q, get returned %q", algo, aws.ToString(sent), aws.ToString(got))
		}
	}
	// Without one asked for, S3 keeps a CRC64NVME (the SDK checks the
	// answer's itself, and checked the algorithm above).
	f.put(t, "plain", data)
	out, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("plain"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, out.Body)
	out.Body.Close()
	if aws.ToString(out.ChecksumCRC64NVME) == "" || out.ChecksumType != types.ChecksumTypeFullObject {
		t.Errorf("default checksum: %q %s", aws.ToString(out.ChecksumCRC64NVME), out.ChecksumType)
	}
	crc := crc32.ChecksumIEEE(data)
	want := base64.StdEncoding.EncodeToString([]byte{byte(crc >> 24), byte(crc >> 16), byte(crc >> 8), byte(crc)})
	h, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("ck-CRC32"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(h.ChecksumCRC32) != want {
		t.Errorf("head: crc32 %q, want %q (%v)", aws.ToString(h.ChecksumCRC32), want, err)
	}

	// A wrong checksum, in a header or in a trailer.
	c := f.raw(t)
	status, body := c.do("PUT", "/bkt/wrong", string(data), map[string]string{"X-Amz-Checksum-Crc32": "AAAAAA=="})
	if status != http.StatusBadRequest || !strings.Contains(body, "BadDigest") {
		t.Errorf("wrong crc32 header: %d %s", status, body)
	}
	chunked := "13\r\n" + string(data) + "\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"
	req, _ := http.NewRequest("PUT", f.srv.Endpoint+"/bkt/wrong", strings.NewReader(chunked))
	status, body = c.doReq(req, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", map[string]string{
		"Content-Encoding": "aws-chunked", "X-Amz-Decoded-Content-Length": "19", "X-Amz-Trailer": "x-amz-checksum-crc32"})
	if status != http.StatusBadRequest || !strings.Contains(body, "BadDigest") {
		t.Errorf("wrong crc32 trailer: %d %s", status, body)
	}
	if _, _, err := f.get(t, "wrong", ""); apiCode(err) != "NoSuchKey" {
		t.Errorf("an upload with a wrong checksum was stored: %v", err)
	}
	// The right trailer is accepted and stored.
	chunked = strings.Replace(chunked, "AAAAAA==", want, 1)
	req, _ = http.NewRequest("PUT", f.srv.Endpoint+"/bkt/trailed", strings.NewReader(chunked))
	status, body = c.doReq(req, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", map[string]string{
		"Content-Encoding": "aws-chunked", "X-Amz-Decoded-Content-Length": "19", "X-Amz-Trailer": "x-amz-checksum-crc32"})
	if status != http.StatusOK {
		t.Fatalf("right crc32 trailer: %d %s", status, body)
	}
	h, err = f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("trailed"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(h.ChecksumCRC32) != want || aws.ToInt64(h.ContentLength) != int64(len(data)) {
		t.Errorf("trailed object: %+v, %v", h, err)
	}
	f.assertNoState(t)
}

// UploadPartCopy copies a range of another object as a part, as the AWS
// CLI does for large server-side copies.
func TestUploadPartCopy(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	src := bytes.Repeat([]byte("0123456789"), 1<<20) // 10 MiB
	f.put(t, "src", src)
	up, err := f.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("dst"), ContentType: aws.String("text/plain")})
	if err != nil {
		t.Fatal(err)
	}
	var parts []types.CompletedPart
	for i, rng := range []string{"bytes=0-6291455", "bytes=6291456-10485759"} {
		n := int32(i + 1)
		out, err := f.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("bkt"), Key: aws.String("dst"), UploadId: up.UploadId,
			PartNumber: &n, CopySource: aws.String("bkt/src"), CopySourceRange: &rng})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{ETag: out.CopyPartResult.ETag, PartNumber: &n})
	}
	n := int32(3)
	_, err = f.client.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: aws.String("bkt"), Key: aws.String("dst"), UploadId: up.UploadId,
		PartNumber: &n, CopySource: aws.String("bkt/src"), CopySourceRange: aws.String("bytes=10485760-10485761")})
	if apiCode(err) != "InvalidArgument" {
		t.Errorf("a range past the source: %v", err)
	}
	if _, err := f.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("dst"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	got, out, err := f.get(t, "dst", "")
	if err != nil || !bytes.Equal(got, src) || aws.ToString(out.ContentType) != "text/plain" {
		t.Errorf("copied object: %d bytes, %+v, %v", len(got), out, err)
	}
	f.assertNoState(t)
}

// Conditional GETs and the ranges S3 serves whole.
func TestConditionsAndRanges(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	f.put(t, "o", []byte("0123456789"))
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	_, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("o"), IfUnmodifiedSince: &past})
	if apiCode(err) != "PreconditionFailed" {
		t.Errorf("If-Unmodified-Since in the past: %v", err)
	}
	if _, _, err := f.get(t, "o", ""); err != nil {
		t.Fatal(err)
	}
	out, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("o"), IfUnmodifiedSince: &future})
	if err != nil {
		t.Errorf("If-Unmodified-Since in the future: %v", err)
	} else {
		out.Body.Close()
	}
	c := f.raw(t)
	for rng, want := range map[string]string{
		"bytes=2-4": "234", "bytes=-3": "789", "bytes=8-": "89", "bytes=5-100": "56789",
		"bytes=0-1,4-5": "0123456789", "bytes=abc": "0123456789", "bytes=4-2": "0123456789", "items=0-1": "0123456789",
	} {
		status, body := c.do("GET", "/bkt/o", "", map[string]string{"Range": rng})
		if body != want || (status == http.StatusPartialContent) != (len(want) < 10) {
			t.Errorf("Range %s: %d %q, want %q", rng, status, body, want)
		}
	}
	if status, _ := c.do("GET", "/bkt/o", "", map[string]string{"Range": "bytes=10-"}); status != http.StatusRequestedRangeNotSatisfiable {
		t.Errorf("a range past the end: %d", status)
	}
	// MaxKeys 0 lists nothing and says so.
	l, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), MaxKeys: aws.Int32(0)})
	if err != nil || len(l.Contents) != 0 || aws.ToInt32(l.KeyCount) != 0 {
		t.Errorf("MaxKeys 0: %+v, %v", l, err)
	}
}

// doReq sends a prepared request with the given payload mode, signed.
func (c *rawClient) doReq(req *http.Request, payload string, hdr map[string]string) (int, string) {
	c.t.Helper()
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Amz-Content-Sha256", payload)
	signReq(c.t, c.f, req, payload)
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// GetObjectAttributes tells what HEAD tells, by name.
func TestObjectAttributes(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	data := []byte("attributes")
	f.put(t, "o", data)
	out, err := f.client.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("bkt"), Key: aws.String("o"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesEtag, types.ObjectAttributesObjectSize, types.ObjectAttributesStorageClass}})
	if err != nil {
		t.Fatal(err)
	}
	if `"`+aws.ToString(out.ETag)+`"` != md5hex(data) || aws.ToInt64(out.ObjectSize) != int64(len(data)) || out.StorageClass != types.StorageClassStandard {
		t.Errorf("attributes: etag %s size %d class %s", aws.ToString(out.ETag), aws.ToInt64(out.ObjectSize), out.StorageClass)
	}
	_, err = f.client.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("bkt"), Key: aws.String("o"),
		ObjectAttributes: []types.ObjectAttributes{"Nonsense"}})
	if apiCode(err) != "InvalidArgument" {
		t.Errorf("an unknown attribute: %v", err)
	}
	_, err = f.client.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("bkt"), Key: aws.String("missing"),
		ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesEtag}})
	if apiCode(err) != "NoSuchKey" {
		t.Errorf("a missing object: %v", err)
	}
}

// A multipart upload created with a checksum algorithm: every part's
// checksum is checked when listed in Complete, and the object gets the
// composite checksum S3 gives it.
func TestMultipartChecksums(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	key := aws.String("mp")
	up, err := f.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: key,
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	if err != nil {
		t.Fatal(err)
	}
	bodies := [][]byte{bytes.Repeat([]byte("x"), 5<<20), []byte("tail")}
	var parts []types.CompletedPart
	composite := sha256.New()
	for i, b := range bodies {
		n := int32(i + 1)
		out, err := f.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: key, UploadId: up.UploadId, PartNumber: &n,
			Body: bytes.NewReader(b), ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if aws.ToString(out.ChecksumSHA256) != base64.StdEncoding.EncodeToString(sum[:]) {
			t.Errorf("part %d checksum %s", n, aws.ToString(out.ChecksumSHA256))
		}
		composite.Write(sum[:])
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: &n, ChecksumSHA256: out.ChecksumSHA256})
	}
	wrong := append([]types.CompletedPart(nil), parts...)
	wrong[0].ChecksumSHA256 = aws.String(base64.StdEncoding.EncodeToString(make([]byte, 32)))
	_, err = f.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: wrong}})
	if apiCode(err) != "InvalidPart" {
		t.Errorf("complete with a wrong part checksum: %v", err)
	}
	done, err := f.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		t.Fatal(err)
	}
	want := base64.StdEncoding.EncodeToString(composite.Sum(nil)) + "-2"
	h, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: key, ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(done.ChecksumSHA256) != want || aws.ToString(h.ChecksumSHA256) != want || h.ChecksumType != types.ChecksumTypeComposite {
		t.Errorf("composite checksum: complete %s, head %s %s, want %s (%v)", aws.ToString(done.ChecksumSHA256), aws.ToString(h.ChecksumSHA256), h.ChecksumType, want, err)
	}
	f.assertNoState(t)
}

// Keys ending in "/" (folders of the AWS console, directory markers of
// Hadoop's S3A) are empty objects of their own.
func TestDirectoryObjects(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	keys := func(prefix, delim string) []string {
		t.Helper()
		in := &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: &prefix}
		if delim != "" {
			in.Delimiter = &delim
		}
		out, err := f.client.ListObjectsV2(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, o := range out.Contents {
			ks = append(ks, aws.ToString(o.Key))
		}
		for _, p := range out.CommonPrefixes {
			ks = append(ks, "P:"+aws.ToString(p.Prefix))
		}
		return ks
	}
	if _, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("folder/"), Body: bytes.NewReader(nil),
		ContentType: aws.String("application/x-directory")}); err != nil {
		t.Fatal(err)
	}
	h, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("folder/")})
	if err != nil || aws.ToInt64(h.ContentLength) != 0 || aws.ToString(h.ContentType) != "application/x-directory" || aws.ToString(h.ETag) != md5hex(nil) {
		t.Fatalf("head folder/: %+v, %v", h, err)
	}
	if _, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("folder")}); err == nil {
		t.Error("folder (no slash) is an object too")
	}
	f.put(t, "folder/file", []byte("inside"))
	f.put(t, "plain/file", []byte("no marker"))
	if got := strings.Join(keys("", ""), ","); got != "folder/,folder/file,plain/file" {
		t.Errorf("list: %s", got)
	}
	if got := strings.Join(keys("", "/"), ","); got != "P:folder/,P:plain/" {
		t.Errorf("list with delimiter: %s", got)
	}
	if got := strings.Join(keys("folder/", "/"), ","); got != "folder/,folder/file" {
		t.Errorf("list of folder/: %s", got)
	}
	if _, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("plain/")}); apiCode(err) != "NotFound" && apiCode(err) != "NoSuchKey" {
		t.Errorf("a directory without its object: %v", err)
	}
	// Deleting the folder object keeps what is in it; deleting the last
	// object leaves no directory behind.
	if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("folder/")}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys("folder", ""), ","); got != "folder/file" {
		t.Errorf("after deleting folder/: %s", got)
	}
	if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("folder/file")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "bkt", "folder")); !os.IsNotExist(err) {
		t.Errorf("empty directory left: %v", err)
	}
	// Only empty ones: a directory holds no bytes.
	_, err = f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("full/"), Body: strings.NewReader("bytes")})
	if apiCode(err) != "InvalidArgument" {
		t.Errorf("a directory object with content: %v", err)
	}
	// A bucket holding only a directory object is not empty.
	if err := f.srv.CreateBucket("onlydir"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("onlydir"), Key: aws.String("d/"), Body: bytes.NewReader(nil)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("onlydir")}); apiCode(err) != "BucketNotEmpty" {
		t.Errorf("delete of a bucket holding a directory object: %v", err)
	}
}

// Listings page as S3 pages them (V1 markers, V2 tokens and start-after),
// encode keys when asked, and carry checksum algorithms and owners.
func TestListingPages(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b b", "c+", "d/e", "f"} {
		f.put(t, k, []byte(k))
	}
	if _, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("g"), Body: strings.NewReader("g"),
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c}); err != nil {
		t.Fatal(err)
	}
	var got []string
	var token *string
	for pages := 0; ; pages++ {
		out, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), MaxKeys: aws.Int32(2), ContinuationToken: token, StartAfter: aws.String("a")})
		if err != nil || pages > 5 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, o := range out.Contents {
			got = append(got, aws.ToString(o.Key))
			if aws.ToString(o.Key) == "g" && (len(o.ChecksumAlgorithm) != 1 || o.ChecksumAlgorithm[0] != types.ChecksumAlgorithmCrc32c) {
				t.Errorf("g listed with checksum algorithms %v", o.ChecksumAlgorithm)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		token = out.NextContinuationToken
	}
	if strings.Join(got, ",") != "b b,c+,d/e,f,g" {
		t.Errorf("V2 pages after a: %q", got)
	}
	got = nil
	var marker *string
	for pages := 0; ; pages++ {
		out, err := f.client.ListObjects(ctx, &s3.ListObjectsInput{Bucket: aws.String("bkt"), MaxKeys: aws.Int32(4), Marker: marker})
		if err != nil || pages > 5 {
			t.Fatalf("page %d: %v", pages, err)
		}
		for _, o := range out.Contents {
			got = append(got, aws.ToString(o.Key))
			if o.Owner == nil || aws.ToString(o.Owner.ID) != f.srv.AccessKey {
				t.Errorf("V1 owner %+v", o.Owner)
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		marker = out.NextMarker
	}
	if strings.Join(got, ",") != "a,b b,c+,d/e,f,g" {
		t.Errorf("V1 pages: %q", got)
	}
	status, body := f.raw(t).do("GET", "/bkt?list-type=2&encoding-type=url&prefix=b", "", nil)
	if status != http.StatusOK || !strings.Contains(body, "<Key>b+b</Key>") || !strings.Contains(body, "<EncodingType>url</EncodingType>") {
		t.Errorf("url-encoded listing: %d %s", status, body)
	}
	if status, body := f.raw(t).do("GET", "/bkt?list-type=2&max-keys=-1", "", nil); status != http.StatusBadRequest {
		t.Errorf("max-keys -1: %d %s", status, body)
	}
	if err := f.srv.CreateBucket("other"); err != nil {
		t.Fatal(err)
	}
	lb, err := f.client.ListBuckets(ctx, &s3.ListBucketsInput{Prefix: aws.String("bk")})
	if err != nil || len(lb.Buckets) != 1 || aws.ToString(lb.Buckets[0].Name) != "bkt" || aws.ToString(lb.Owner.ID) != f.srv.AccessKey {
		t.Errorf("list buckets with a prefix: %+v, %v", lb, err)
	}
}

// A missing bucket is named before a missing upload, as S3 does.
func TestMissingBucketFirst(t *testing.T) {
	f := start(t)
	c := f.raw(t)
	for _, req := range [][2]string{
		{"POST", "/nobucket/k?uploadId=x"}, {"DELETE", "/nobucket/k?uploadId=x"},
		{"GET", "/nobucket/k?uploadId=x"}, {"PUT", "/nobucket/k?uploadId=x&partNumber=1"},
	} {
		body := ""
		if req[0] == "POST" {
			body = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>"
		}
		if status, resp := c.do(req[0], req[1], body, nil); status != http.StatusNotFound || req[0] != "HEAD" && !strings.Contains(resp, "NoSuchBucket") {
			t.Errorf("%s %s: %d %s", req[0], req[1], status, resp)
		}
	}
}

// Conditional deletes and completes: the condition holds or nothing
// changes.
func TestConditionalWrites(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	f.put(t, "o", []byte("one"))
	_, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("o"), IfMatch: aws.String(`"0123"`)})
	if apiCode(err) != "PreconditionFailed" {
		t.Errorf("delete with a stale If-Match: %v", err)
	}
	if got, _, err := f.get(t, "o", ""); err != nil || string(got) != "one" {
		t.Fatalf("object after a refused delete: %q, %v", got, err)
	}
	if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("o"), IfMatch: aws.String(md5hex([]byte("one")))}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.get(t, "o", ""); apiCode(err) != "NoSuchKey" {
		t.Errorf("after a conditional delete: %v", err)
	}
	f.put(t, "taken", []byte("first"))
	up, err := f.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("taken")})
	if err != nil {
		t.Fatal(err)
	}
	n := int32(1)
	part, err := f.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("taken"), UploadId: up.UploadId, PartNumber: &n, Body: strings.NewReader("second")})
	if err != nil {
		t.Fatal(err)
	}
	in := &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("taken"), UploadId: up.UploadId, IfNoneMatch: aws.String("*"),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: &n}}}}
	if _, err := f.client.CompleteMultipartUpload(ctx, in); apiCode(err) != "PreconditionFailed" {
		t.Errorf("complete with If-None-Match * over an object: %v", err)
	}
	if got, _, err := f.get(t, "taken", ""); err != nil || string(got) != "first" {
		t.Errorf("object after a refused complete: %q, %v", got, err)
	}
	// The upload is still there to complete without the condition.
	in.IfNoneMatch = nil
	if _, err := f.client.CompleteMultipartUpload(ctx, in); err != nil {
		t.Fatal(err)
	}
	if got, _, err := f.get(t, "taken", ""); err != nil || string(got) != "second" {
		t.Errorf("object after complete: %q, %v", got, err)
	}
}

// DeleteObjects keeps the ETag condition of each object.
func TestDeleteObjectsConditions(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	f.put(t, "a", []byte("a"))
	f.put(t, "b", []byte("b"))
	out, err := f.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("bkt"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{
		{Key: aws.String("a"), ETag: aws.String(`"stale"`)},
		{Key: aws.String("b"), ETag: aws.String(md5hex([]byte("b")))},
		{Key: aws.String("never-was")},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].Key) != "a" || aws.ToString(out.Errors[0].Code) != "PreconditionFailed" || len(out.Deleted) != 2 {
		t.Errorf("deleted %+v, errors %+v", out.Deleted, out.Errors)
	}
	if got, _, err := f.get(t, "a", ""); err != nil || string(got) != "a" {
		t.Errorf("a after a refused delete: %q, %v", got, err)
	}
	if _, _, err := f.get(t, "b", ""); apiCode(err) != "NoSuchKey" {
		t.Errorf("b after its delete: %v", err)
	}
}

// User-metadata keys go on the wire in lower case, as S3 sends them
// (clients that keep header names as received, like boto3, return them
// so), whatever case they were sent in; values keep theirs.
func TestMetadataKeysLowerCase(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	_, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("m"), Body: strings.NewReader("x"),
		Metadata: map[string]string{"k": "v", "MixedCase": "Val"}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("m")})
	if err != nil || len(h.Metadata) != 2 || h.Metadata["k"] != "v" || h.Metadata["mixedcase"] != "Val" {
		t.Errorf("metadata through the SDK: %v, %v", h.Metadata, err)
	}

	// The header names as sent, read off the connection.
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		req, err := http.NewRequest(method, f.srv.Endpoint+"/bkt/m", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		signReq(t, f, req, "UNSIGNED-PAYLOAD")
		c, err := net.Dial("tcp", req.URL.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if err := req.Write(c); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		got := map[string]string{}
		status := ""
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: reading the answer: %v", method, err)
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				break
			}
			if status == "" {
				status = line
				continue
			}
			if k, v, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(strings.ToLower(k), "x-amz-meta-") {
				got[k] = v
			}
		}
		want := map[string]string{"x-amz-meta-k": "v", "x-amz-meta-mixedcase": "Val"}
		if !strings.HasPrefix(status, "HTTP/1.1 200") || len(got) != len(want) || got["x-amz-meta-k"] != "v" || got["x-amz-meta-mixedcase"] != "Val" {
			t.Errorf("%s: %s, user metadata on the wire %v, want %v", method, status, got, want)
		}
	}
}
