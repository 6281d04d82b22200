package s3server_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/s3server"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type fixture struct {
	srv    *s3server.Server
	client *s3.Client
	dir    string
}

func start(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	srv, err := s3server.Start(t.Context(), dir, "", s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	return &fixture{srv: srv, dir: dir, client: newClient(t, srv.Endpoint, srv.AccessKey, srv.SecretKey)}
}

func newClient(t *testing.T, endpoint, ak, sk string) *s3.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
		HTTPClient:   &http.Client{Transport: tr},
		// Ranged GETs carry no whole-object checksum; do not log about it.
		DisableLogOutputChecksumValidationSkipped: true,
	})
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return `"` + hex.EncodeToString(s[:]) + `"`
}

func (f *fixture) put(t *testing.T, key string, b []byte) {
	t.Helper()
	_, err := f.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: &key, Body: bytes.NewReader(b)})
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func (f *fixture) get(t *testing.T, key, rng string) ([]byte, *s3.GetObjectOutput, error) {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: &key}
	if rng != "" {
		in.Range = &rng
	}
	out, err := f.client.GetObject(context.Background(), in)
	if err != nil {
		return nil, nil, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	return b, out, err
}

func TestPutGetHead(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	data := []byte("hello, embedded s3")
	f.put(t, "dir/sub/obj.txt", data)

	// It is a plain file where the directory layout says.
	if b, err := os.ReadFile(filepath.Join(f.dir, "bkt", "dir", "sub", "obj.txt")); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("file on disk: %q, %v", b, err)
	}
	got, out, err := f.get(t, "dir/sub/obj.txt", "")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("get: %q, %v", got, err)
	}
	if aws.ToString(out.ETag) != md5hex(data) || aws.ToInt64(out.ContentLength) != int64(len(data)) || out.LastModified == nil {
		t.Errorf("get: etag %s, length %d, modified %v", aws.ToString(out.ETag), aws.ToInt64(out.ContentLength), out.LastModified)
	}
	head, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/sub/obj.txt")})
	if err != nil || aws.ToString(head.ETag) != md5hex(data) || aws.ToInt64(head.ContentLength) != int64(len(data)) {
		t.Fatalf("head: %+v, %v", head, err)
	}
	if _, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("dir/sub")}); apiCode(err) != "NotFound" {
		t.Errorf("head of a directory: %v", err)
	}
	if _, _, err := f.get(t, "missing", ""); apiCode(err) != "NoSuchKey" {
		t.Errorf("get missing: %v", err)
	}
	if _, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("nobucket"), Key: aws.String("k")}); apiCode(err) != "NoSuchBucket" {
		t.Errorf("get in a missing bucket: %v", err)
	}
	// Files put there by other means are objects too.
	if err := os.WriteFile(filepath.Join(f.dir, "bkt", "dropped.bin"), []byte("dropped"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, out, err := f.get(t, "dropped.bin", ""); err != nil || string(got) != "dropped" || aws.ToString(out.ETag) != md5hex([]byte("dropped")) {
		t.Errorf("dropped file: %q, %v", got, err)
	}
}

func TestRanges(t *testing.T) {
	f := start(t)
	data := []byte("0123456789abcdefghij")
	f.put(t, "r", data)
	for _, c := range []struct {
		rng, want, contentRange string
	}{
		{"bytes=0-9", "0123456789", "bytes 0-9/20"},
		{"bytes=15-", "fghij", "bytes 15-19/20"},
		{"bytes=18-100", "ij", "bytes 18-19/20"},
		{"bytes=-3", "hij", "bytes 17-19/20"},
		{"bytes=-100", string(data), "bytes 0-19/20"}, // a footer read longer than the object
	} {
		got, out, err := f.get(t, "r", c.rng)
		if err != nil {
			t.Errorf("%s: %v", c.rng, err)
			continue
		}
		if string(got) != c.want || aws.ToString(out.ContentRange) != c.contentRange {
			t.Errorf("%s: %q with Content-Range %q, want %q with %q", c.rng, got, aws.ToString(out.ContentRange), c.want, c.contentRange)
		}
	}
	for _, rng := range []string{"bytes=20-", "bytes=25-30"} {
		if _, _, err := f.get(t, "r", rng); apiCode(err) != "InvalidRange" {
			t.Errorf("%s: %v, want InvalidRange", rng, err)
		}
	}
}

func TestList(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	// "a-b" sorts before "a/b" in S3 (byte order of the whole key), not in
	// a directory walk.
	keys := []string{"a-b", "a/b", "a/c/d", "a.txt", "b/1", "b/2", "b/3"}
	for _, k := range keys {
		f.put(t, k, []byte(k))
	}
	list := func(prefix, delim string, max int32) (got []string) {
		in := &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: &prefix}
		if delim != "" {
			in.Delimiter = &delim
		}
		if max > 0 {
			in.MaxKeys = &max
		}
		p := s3.NewListObjectsV2Paginator(f.client, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("list %q: %v", prefix, err)
			}
			for _, o := range page.Contents {
				got = append(got, aws.ToString(o.Key))
				if aws.ToString(o.ETag) != md5hex([]byte(aws.ToString(o.Key))) {
					t.Errorf("%s: etag %s", aws.ToString(o.Key), aws.ToString(o.ETag))
				}
			}
			for _, cp := range page.CommonPrefixes {
				got = append(got, aws.ToString(cp.Prefix))
			}
		}
		return got
	}
	for _, c := range []struct {
		prefix, delim string
		max           int32
		want          string
	}{
		{"", "", 0, "a-b a.txt a/b a/c/d b/1 b/2 b/3"},
		{"", "", 2, "a-b a.txt a/b a/c/d b/1 b/2 b/3"}, // four pages
		{"a/", "", 0, "a/b a/c/d"},
		{"a", "", 0, "a-b a.txt a/b a/c/d"},
		{"b/", "", 1, "b/1 b/2 b/3"},
		{"a/c", "", 0, "a/c/d"},
		{"nothing", "", 0, ""},
		{"", "/", 0, "a-b a.txt a/ b/"},
		{"", "/", 1, "a-b a.txt a/ b/"},
		{"a/", "/", 0, "a/b a/c/"},
	} {
		if got := strings.Join(list(c.prefix, c.delim, c.max), " "); got != c.want {
			t.Errorf("list prefix %q delimiter %q max %d = %q, want %q", c.prefix, c.delim, c.max, got, c.want)
		}
	}
	if _, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("nobucket")}); apiCode(err) != "NoSuchBucket" {
		t.Errorf("list a missing bucket: %v", err)
	}
}

func TestDelete(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	f.put(t, "x/y/z", []byte("z"))
	if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("x/y/z")}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "bkt", "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty directories left after the last object went: %v", err)
	}
	// Deleting what is not there succeeds, as in S3.
	if _, err := f.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("x/y/z")}); err != nil {
		t.Errorf("delete missing: %v", err)
	}
	// With the directory gone, "x" can be an object.
	f.put(t, "x", []byte("now a file"))
}

func TestKeyConflicts(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	f.put(t, "a/b", []byte("1"))
	for _, key := range []string{"a", "a/b/c", "a//b", "trailing/"} {
		_, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key), Body: strings.NewReader("x")})
		if apiCode(err) != "InvalidArgument" {
			t.Errorf("put %q: %v, want InvalidArgument", key, err)
		}
	}
}

func TestMultipart(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	key := "big/object"
	create, err := f.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	parts := [][]byte{bytes.Repeat([]byte("a"), 5<<20), bytes.Repeat([]byte("b"), 5<<20), []byte("tail")}
	var done []types.CompletedPart
	// Parts arrive out of order and concurrently, as from a parallel writer.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := len(parts) - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := int32(i + 1)
			out, err := f.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: &key, UploadId: create.UploadId, PartNumber: &n, Body: bytes.NewReader(parts[i])})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			done = append(done, types.CompletedPart{ETag: out.ETag, PartNumber: &n})
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	lp, err := f.client.ListParts(ctx, &s3.ListPartsInput{Bucket: aws.String("bkt"), Key: &key, UploadId: create.UploadId})
	if err != nil || len(lp.Parts) != 3 || aws.ToInt64(lp.Parts[2].Size) != 4 {
		t.Fatalf("list parts: %+v, %v", lp, err)
	}
	// Nothing is visible before Complete.
	if _, _, err := f.get(t, key, ""); apiCode(err) != "NoSuchKey" {
		t.Fatalf("object visible before Complete: %v", err)
	}
	comp, err := f.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: &key, UploadId: create.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: sortParts(done)}})
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Join(parts, nil)
	got, out, err := f.get(t, key, "")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, %v", len(got), err)
	}
	// S3's multipart ETag: the MD5 of the parts' MD5s, and their number.
	h := md5.New()
	for _, p := range parts {
		s := md5.Sum(p)
		h.Write(s[:])
	}
	wantETag := fmt.Sprintf(`"%x-3"`, h.Sum(nil))
	if aws.ToString(out.ETag) != aws.ToString(comp.ETag) || aws.ToString(out.ETag) != wantETag {
		t.Errorf("etag: complete %s, get %s, want %s", aws.ToString(comp.ETag), aws.ToString(out.ETag), wantETag)
	}
	list, err := f.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: &key})
	if err != nil || len(list.Contents) != 1 || aws.ToString(list.Contents[0].ETag) != wantETag {
		t.Errorf("listed: %+v, %v", list, err)
	}
	// Each part can be read back by its number.
	off := 0
	for i, p := range parts {
		n := int32(i + 1)
		po, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: &key, PartNumber: &n})
		if err != nil {
			t.Fatalf("part %d: %v", n, err)
		}
		b, _ := io.ReadAll(po.Body)
		po.Body.Close()
		wantRange := fmt.Sprintf("bytes %d-%d/%d", off, off+len(p)-1, len(want))
		if !bytes.Equal(b, p) || aws.ToInt32(po.PartsCount) != 3 || aws.ToString(po.ContentRange) != wantRange {
			t.Errorf("part %d: %d bytes, parts count %d, range %s", n, len(b), aws.ToInt32(po.PartsCount), aws.ToString(po.ContentRange))
		}
		off += len(p)
	}
	n := int32(4)
	if _, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: &key, PartNumber: &n}); apiCode(err) != "InvalidPartNumber" {
		t.Errorf("part 4 of 3: %v", err)
	}
	// Completing again answers the same, as S3 does for a retried request.
	again, err := f.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: &key, UploadId: create.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: sortParts(done)}})
	if err != nil || aws.ToString(again.ETag) != wantETag {
		t.Errorf("second complete: %+v, %v", again, err)
	}
	f.assertNoState(t)
}

func sortParts(p []types.CompletedPart) []types.CompletedPart {
	out := make([]types.CompletedPart, len(p))
	for _, c := range p {
		out[*c.PartNumber-1] = c
	}
	return out
}

// assertNoState checks that no upload or temporary file is left behind.
func (f *fixture) assertNoState(t *testing.T) {
	t.Helper()
	for _, d := range []string{"tmp", "uploads"} {
		ents, err := os.ReadDir(filepath.Join(f.dir, ".s3server", d))
		if err != nil || len(ents) != 0 {
			t.Errorf(".s3server/%s holds %d entries (%v)", d, len(ents), err)
		}
	}
}

func TestMultipartAbortAndSmallParts(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	key := "aborted"
	up, err := f.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	var done []types.CompletedPart
	for i, b := range [][]byte{[]byte("too small"), []byte("last")} {
		n := int32(i + 1)
		out, err := f.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: &key, UploadId: up.UploadId, PartNumber: &n, Body: bytes.NewReader(b)})
		if err != nil {
			t.Fatal(err)
		}
		done = append(done, types.CompletedPart{ETag: out.ETag, PartNumber: &n})
	}
	uploads, err := f.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt")})
	if err != nil || len(uploads.Uploads) != 1 || aws.ToString(uploads.Uploads[0].Key) != key {
		t.Fatalf("uploads in progress: %+v, %v", uploads, err)
	}
	// S3 refuses parts under 5 MiB but the last; so does this server.
	_, err = f.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: &key, UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}})
	if apiCode(err) != "EntityTooSmall" {
		t.Errorf("complete with a small part: %v", err)
	}
	if _, err := f.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("bkt"), Key: &key, UploadId: up.UploadId}); err != nil {
		t.Fatal(err)
	}
	uploads, err = f.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt")})
	if err != nil || len(uploads.Uploads) != 0 {
		t.Errorf("uploads after abort: %+v, %v", uploads, err)
	}
	if _, _, err := f.get(t, key, ""); apiCode(err) != "NoSuchKey" {
		t.Errorf("aborted object visible: %v", err)
	}
	if _, err := f.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String("bkt"), Key: &key, UploadId: up.UploadId}); apiCode(err) != "NoSuchUpload" {
		t.Errorf("second abort: %v", err)
	}
	f.assertNoState(t)
}

func TestIfMatch(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	f.put(t, "v", []byte("version one"))
	etag := md5hex([]byte("version one"))
	for _, im := range []string{etag, strings.Trim(etag, `"`), "*", `"other", ` + etag} {
		out, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("v"), IfMatch: &im, Range: aws.String("bytes=0-3")})
		if err != nil {
			t.Errorf("If-Match %s: %v", im, err)
			continue
		}
		out.Body.Close()
	}
	f.put(t, "v", []byte("version two"))
	_, err := f.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("v"), IfMatch: &etag, Range: aws.String("bytes=0-3")})
	if apiCode(err) != "PreconditionFailed" {
		t.Errorf("get with a stale ETag: %v", err)
	}
	_, err = f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("v"), IfMatch: &etag})
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusPreconditionFailed {
		t.Errorf("head with a stale ETag: %v", err)
	}
	// Conditional PUT comes from gofakes3.
	_, err = f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("v"), IfMatch: &etag, Body: strings.NewReader("three")})
	if apiCode(err) != "PreconditionFailed" {
		t.Errorf("conditional put with a stale ETag: %v", err)
	}
}

// Readers pinned to a version never see a torn or mixed object while it is
// being overwritten: the write is a rename, and If-Match is checked against
// the file being sent.
func TestOverwriteWhileReading(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	a, b := bytes.Repeat([]byte("A"), 1<<20), bytes.Repeat([]byte("B"), 1<<20)
	f.put(t, "o", a)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			body := a
			if i%2 == 0 {
				body = b
			}
			if _, err := f.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("o"), Body: bytes.NewReader(body)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		got, out, err := f.get(t, "o", "")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatal("read a torn object")
		}
		if aws.ToString(out.ETag) != md5hex(got) {
			t.Fatal("ETag does not match the bytes sent")
		}
	}
	close(stop)
	wg.Wait()
}

func TestAuthentication(t *testing.T) {
	f := start(t)
	ctx := context.Background()
	bad := newClient(t, f.srv.Endpoint, f.srv.AccessKey, "wrong")
	if _, err := bad.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")}); apiCode(err) != "SignatureDoesNotMatch" {
		t.Errorf("wrong secret: %v", err)
	}
	unknown := newClient(t, f.srv.Endpoint, "NOSUCHKEY", f.srv.SecretKey)
	if _, err := unknown.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")}); apiCode(err) != "InvalidAccessKeyId" {
		t.Errorf("unknown key: %v", err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(f.srv.Endpoint + "/bkt/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous list: %s", resp.Status)
	}

	// A presigned URL works without credentials, and only as signed.
	f.put(t, "shared", []byte("presigned body"))
	ps, err := s3.NewPresignClient(f.client).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("shared")})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = hc.Get(ps.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "presigned body" {
		t.Errorf("presigned get: %s %q", resp.Status, body)
	}
	resp, err = hc.Get(strings.Replace(ps.URL, "/shared?", "/other?", 1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("presigned URL for another key: %s", resp.Status)
	}

	// A body that is not what was signed is refused and leaves nothing.
	req, err := http.NewRequest(http.MethodPut, f.srv.Endpoint+"/bkt/tampered", strings.NewReader("PAYLOAD"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("payload"))
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	creds := aws.Credentials{AccessKeyID: f.srv.AccessKey, SecretAccessKey: f.srv.SecretKey}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("put with a body other than signed: %s", resp.Status)
	}
	if _, _, err := f.get(t, "tampered", ""); apiCode(err) != "NoSuchKey" {
		t.Errorf("tampered upload visible: %v", err)
	}
	f.assertNoState(t)
}

func TestStartOptionsAndClose(t *testing.T) {
	if _, err := s3server.Start(t.Context(), t.TempDir(), "", s3server.Options{AccessKey: "only-one"}); err == nil {
		t.Error("an access key without a secret key was accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := s3server.Start(ctx, filepath.Join(t.TempDir(), "new", "dir"), "127.0.0.1:0", s3server.Options{AccessKey: "AK", SecretKey: "SK"})
	if err != nil {
		t.Fatal(err)
	}
	if srv.AccessKey != "AK" || !strings.HasPrefix(srv.Endpoint, "http://127.0.0.1:") {
		t.Errorf("server %+v", srv)
	}
	if err := srv.CreateBucket("twice"); err != nil {
		t.Fatal(err)
	}
	if err := srv.CreateBucket("twice"); err != nil {
		t.Errorf("CreateBucket is not idempotent: %v", err)
	}
	if err := srv.CreateBucket("Bad_Name"); err == nil {
		t.Error("invalid bucket name accepted")
	}
	c := newClient(t, srv.Endpoint, "AK", "SK")
	out, err := c.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil || len(out.Buckets) != 1 || aws.ToString(out.Buckets[0].Name) != "twice" {
		t.Fatalf("list buckets: %+v, %v", out, err)
	}
	// Cancelling the context stops the server (polled: refused requests
	// are all a client sees of it).
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.ListBuckets(context.Background(), &s3.ListBucketsInput{})
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server still answers after its context was cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close after cancel: %v", err)
	}
}
