package s3server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"golang.org/x/sys/unix"

	"github.com/sluice-data/sluice/s3server"
)

const secret = "TOP SECRET host file, never to be served"

// startBesideSecrets serves parent/root, with a file and a directory
// planted beside the root and symbolic links inside it that point at them.
func startBesideSecrets(t *testing.T) (f *fixture, parent string) {
	t.Helper()
	parent = t.TempDir()
	root := filepath.Join(parent, "root")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(parent, "secret.txt"), []byte(secret), 0o644))
	must(os.MkdirAll(filepath.Join(parent, "outside"), 0o755))
	must(os.WriteFile(filepath.Join(parent, "outside", "file"), []byte(secret), 0o644))
	srv, err := s3server.Start(t.Context(), root, "", s3server.Options{})
	must(err)
	t.Cleanup(func() { srv.Close() })
	must(srv.CreateBucket("bkt"))
	bkt := filepath.Join(root, "bkt")
	must(os.WriteFile(filepath.Join(bkt, "real.txt"), []byte("inside"), 0o644))
	must(os.Symlink("../../secret.txt", filepath.Join(bkt, "link-file")))
	must(os.Symlink(filepath.Join(parent, "secret.txt"), filepath.Join(bkt, "abs-link")))
	must(os.Symlink("../../outside", filepath.Join(bkt, "link-dir")))
	must(os.Symlink("real.txt", filepath.Join(bkt, "inside-link"))) // stays inside: served
	must(os.Symlink("../outside", filepath.Join(root, "linkbucket")))
	return &fixture{srv: srv, dir: root, client: newClient(t, srv.Endpoint, srv.AccessKey, srv.SecretKey)}, parent
}

// Nothing outside the served directory is listed, read, hashed, written
// or deleted, whatever the request: "..", percent-encoded forms, absolute
// keys, symbolic links inside the root that point out.
func TestNothingOutsideTheRoot(t *testing.T) {
	f, parent := startBesideSecrets(t)
	ctx := context.Background()
	secretETag := md5hex([]byte(secret))
	outside := func() map[string]string {
		m := snapshot(t, parent)
		for p := range m {
			if strings.HasPrefix(p, f.dir) {
				delete(m, p)
			}
		}
		return m
	}
	before := outside()
	leaks := func(what, s string) {
		t.Helper()
		if strings.Contains(s, "TOP SECRET") || strings.Contains(s, strings.Trim(secretETag, `"`)) {
			t.Errorf("%s reveals the file outside the root: %.300s", what, s)
		}
	}

	// Listing.
	for _, pfx := range []string{"", "../", "../../", "..", "../../secret", "../../outside/", "link-dir/", "link-dir",
		"link-file", "abs-link", "./", "/", "//", "bkt/../../", "real.txt/../../../"} {
		for _, delim := range []string{"", "/"} {
			in := &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: aws.String(pfx)}
			if delim != "" {
				in.Delimiter = aws.String(delim)
			}
			out, err := f.client.ListObjectsV2(ctx, in)
			if err != nil {
				t.Errorf("list %q: %v", pfx, err)
				continue
			}
			for _, o := range out.Contents {
				k := aws.ToString(o.Key)
				if k != "real.txt" && k != "inside-link" || aws.ToString(o.ETag) == secretETag {
					t.Errorf("list %q lists %s %s", pfx, k, aws.ToString(o.ETag))
				}
			}
			for _, p := range out.CommonPrefixes {
				if aws.ToString(p.Prefix) == "link-dir/" {
					t.Errorf("list %q lists the linked directory", pfx)
				}
			}
		}
	}
	c := f.raw(t)
	for _, q := range []string{"?prefix=../../", "?list-type=2&prefix=..%2F..%2F", "?prefix=%2e%2e/%2e%2e/secret"} {
		status, body := c.do("GET", "/bkt"+q, "", nil)
		leaks("list "+q, body)
		if status != http.StatusOK || strings.Contains(body, "<Contents>") && !strings.Contains(body, "real.txt") {
			t.Errorf("list %s: %d %s", q, status, body)
		}
	}
	if status, body := c.do("GET", "/linkbucket", "", nil); status != http.StatusNotFound {
		t.Errorf("list of a linked bucket: %d %s", status, body)
	}

	// Reading, by path forms that resolve outside.
	paths := []string{
		"/bkt/../secret.txt", "/bkt/../../secret.txt", "/bkt/%2e%2e/%2e%2e/secret.txt", "/bkt/%2E%2E%2F%2E%2E%2Fsecret.txt",
		"/bkt/..%2f..%2fsecret.txt", "/bkt/link-file", "/bkt/abs-link", "/bkt/link-dir/file",
		"/bkt/" + url.PathEscape(filepath.Join(parent, "secret.txt")), "/bkt/" + filepath.Join(parent, "secret.txt"),
		"/bkt//" + strings.TrimPrefix(filepath.Join(parent, "secret.txt"), "/"), "/linkbucket/file", "/../secret.txt",
		"/bkt/link-dir/", "/bkt/link-dir/sub/", "/linkbucket/d/",
	}
	for _, p := range paths {
		for _, m := range []string{"GET", "HEAD"} {
			status, body := c.do(m, p, "", nil)
			leaks(m+" "+p, body)
			if status < 400 {
				t.Errorf("%s %s: %d", m, p, status)
			}
		}
		status, body := c.do("GET", p+"?partNumber=1", "", map[string]string{"Range": "bytes=0-3"})
		leaks("ranged GET "+p, body)
		if status < 400 {
			t.Errorf("ranged GET %s: %d", p, status)
		}
	}
	if got, _, err := f.get(t, "inside-link", ""); err != nil || string(got) != "inside" {
		t.Errorf("a link inside the root: %q, %v", got, err)
	}

	// Copying from them, plain and as a part.
	for _, p := range paths {
		src := strings.TrimPrefix(p, "/")
		status, body := c.do("PUT", "/bkt/copied", "", map[string]string{"X-Amz-Copy-Source": src})
		leaks("copy from "+p, body)
		if status < 400 {
			t.Errorf("copy from %s: %d %s", p, status, body)
		}
	}

	// Writing and deleting through them: the links inside the root may be
	// replaced or removed, the files they point at never change.
	for _, p := range paths {
		for _, m := range []string{"PUT", "DELETE"} {
			status, body := c.do(m, p, "overwritten", nil)
			leaks(m+" "+p, body)
			if status >= 500 {
				t.Errorf("%s %s: %d %s", m, p, status, body)
			}
		}
	}
	for _, key := range []string{"link-dir/file", "link-dir/new", "abs-link", "link-file"} {
		up, err := f.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(key)})
		if err != nil {
			continue // refused at once: fine
		}
		n := int32(1)
		part, err := f.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String(key), UploadId: up.UploadId, PartNumber: &n, Body: strings.NewReader("multipart")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String(key), UploadId: up.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: &n}}}})
		if err != nil && apiCode(err) != "InvalidArgument" {
			t.Errorf("multipart to %s: %v", key, err)
		}
	}
	sameTree(t, "requests", before, outside())
	// Directory objects keep their metadata in an extended attribute of
	// the directory: none was set outside either.
	for _, p := range []string{parent, filepath.Join(parent, "outside"), filepath.Join(parent, "outside", "file"), filepath.Join(parent, "secret.txt")} {
		if _, err := unix.Getxattr(p, "user.sluice.s3", nil); err == nil {
			t.Errorf("%s got the server's metadata", p)
		}
	}

	// Nothing inside the root holds the secret either (no copy, no part).
	for p, v := range snapshot(t, f.dir) {
		if strings.Contains(v, "TOP SECRET") {
			t.Errorf("%s holds the secret", p)
		}
	}
}

// A prefix that runs through an existing object names nothing: an empty
// listing, not a server error.
func TestListPrefixUnderObject(t *testing.T) {
	f := start(t)
	f.put(t, "obj", []byte("x"))
	for _, pfx := range []string{"obj/", "obj/sub/", "obj/sub/deeper/x", "obj//", "obj/./x"} {
		out, err := f.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: aws.String(pfx), Delimiter: aws.String("/")})
		if err != nil || len(out.Contents) != 0 || len(out.CommonPrefixes) != 0 {
			t.Errorf("list %q: %+v, %v", pfx, out, err)
		}
	}
	out, err := f.client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: aws.String("ob")})
	if err != nil || len(out.Contents) != 1 || !bytes.Equal([]byte(aws.ToString(out.Contents[0].Key)), []byte("obj")) {
		t.Errorf("list \"ob\": %+v, %v", out, err)
	}
}
