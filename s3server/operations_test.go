package s3server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// notImplemented are the subresources of the S3 API reference that select
// an operation this server does not implement: every bucket and object
// operation URI of the S3 API model (aws-sdk-go-v2 service/s3's generated
// serializers, "/{Bucket}?tagging", "/{Key+}?retention", ...) minus the
// ones implemented (?location, ?uploads, ?uploadId, ?delete, ?list-type,
// and ?attributes, which reads and is tested on objects elsewhere).
var notImplemented = []string{
	"abac", "accelerate", "acl", "analytics", "annotation", "cors", "encryption",
	"intelligent-tiering", "inventory", "legal-hold", "lifecycle", "logging",
	"metadataAnnotationTable", "metadataConfiguration", "metadataInventoryTable",
	"metadataJournalTable", "metadataTable", "metrics", "notification", "object-lock",
	"ownershipControls", "policy", "policyStatus", "publicAccessBlock", "renameObject",
	"replication", "requestPayment", "restore", "retention", "select&select-type=2", "session",
	"tagging", "torrent", "versioning", "versions", "website",
}

var allMethods = []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete}

// rawClient sends hand-made requests signed with the server's key.
type rawClient struct {
	t    *testing.T
	f    *fixture
	hc   *http.Client
	sign bool
}

func (f *fixture) raw(t *testing.T) *rawClient {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &rawClient{t: t, f: f, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}, sign: true}
}

// do sends method to the raw path and query (as they go on the wire) and
// returns the status and the body.
func (c *rawClient) do(method, pathAndQuery string, body string, hdr map[string]string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.f.srv.Endpoint+pathAndQuery, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	sum := sha256.Sum256([]byte(body))
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", payload)
	if c.sign {
		signReq(c.t, c.f, req, payload)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, pathAndQuery, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// snapshot is every file and directory under dir with its size, time and
// content, to prove a request changed nothing.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		m[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s changed %s: %q -> %q", what, p, v, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s created %s", what, p)
		}
	}
}

// Every request for an operation this server does not implement is
// answered 501 NotImplemented and changes nothing, whatever its method, on
// objects and on buckets (an empty bucket, which a plain DELETE removes).
func TestNotImplementedChangesNothing(t *testing.T) {
	f := start(t)
	f.put(t, "k", []byte("precious"))
	f.put(t, "dir/k2", []byte("also precious"))
	if err := f.srv.CreateBucket("empty"); err != nil {
		t.Fatal(err)
	}
	c := f.raw(t)
	before := snapshot(t, f.dir)

	check := func(method, pq, body string, hdr map[string]string) {
		t.Helper()
		status, resp := c.do(method, pq, body, hdr)
		what := method + " " + pq
		if hdr != nil {
			what += fmt.Sprint(" ", hdr)
		}
		if status != http.StatusNotImplemented {
			t.Errorf("%s: %d %s", what, status, resp)
		} else if method != http.MethodHead && !strings.Contains(resp, "<Code>NotImplemented</Code>") {
			t.Errorf("%s: body %s", what, resp)
		}
		sameTree(t, what, before, snapshot(t, f.dir))
	}
	const xmlBody = `<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>`
	for _, sub := range notImplemented {
		for _, m := range allMethods {
			for _, path := range []string{"/bkt/k", "/bkt/dir/k2", "/empty", "/empty/", "/"} {
				body := ""
				if m == http.MethodPut || m == http.MethodPost {
					body = xmlBody
				}
				check(m, path+"?"+sub, body, nil)
				check(m, path+"?"+strings.Replace(sub, "&", "=x&", 1)+"=x", body, nil)
			}
		}
	}

	// Operations on implemented paths that select what is not implemented.
	for _, tc := range []struct {
		method, pq string
		hdr        map[string]string
	}{
		{"PUT", "/bkt/k?attributes", nil}, // GetObjectAttributes is GET only
		{"DELETE", "/bkt/k?attributes", nil},
		{"POST", "/bkt/k?attributes", nil},
		{"DELETE", "/empty?attributes", nil},
		{"POST", "/bkt", nil},          // browser form upload
		{"POST", "/bkt/k", nil},        // no such operation
		{"POST", "/bkt/k?delete", nil}, // DeleteObjects is on buckets
		{"PUT", "/bkt/k?uploads", nil},
		{"PUT", "/empty?uploads", nil},
		{"DELETE", "/empty?uploads", nil},
		{"DELETE", "/bkt?delete", nil},
		{"PUT", "/bkt/k?unknown=1", nil},
		{"DELETE", "/bkt/k?unknown", nil},
		{"DELETE", "/empty?unknown", nil},
		{"DELETE", "/bkt/k?versionId=3HL4kqtJlcpXroDTDmJ", nil},
		{"GET", "/bkt/k?versionId=3HL4kqtJlcpXroDTDmJ", nil},
		{"PUT", "/bkt/k", map[string]string{"X-Amz-Tagging": "a=b"}},
		{"PUT", "/bkt/k", map[string]string{"X-Amz-Object-Lock-Mode": "COMPLIANCE", "X-Amz-Object-Lock-Retain-Until-Date": "2030-01-01T00:00:00Z"}},
		{"PUT", "/bkt/k", map[string]string{"X-Amz-Object-Lock-Legal-Hold": "ON"}},
		{"PUT", "/bkt/k", map[string]string{"X-Amz-Acl": "public-read"}},
		{"PUT", "/bkt/k", map[string]string{"X-Amz-Grant-Read": "uri=http://acs.amazonaws.com/groups/global/AllUsers"}},
		{"PUT", "/bkt/k", map[string]string{"X-Amz-Server-Side-Encryption-Customer-Algorithm": "AES256"}},
		{"PUT", "/bkt/k2", map[string]string{"X-Amz-Copy-Source": "/bkt/k", "X-Amz-Tagging-Directive": "REPLACE", "X-Amz-Tagging": "a=b"}},
		{"PUT", "/locked", map[string]string{"X-Amz-Bucket-Object-Lock-Enabled": "true"}},
		{"OPTIONS", "/bkt/k", map[string]string{"Origin": "http://example.com", "Access-Control-Request-Method": "PUT"}},
		{"PATCH", "/bkt/k", nil},
	} {
		check(tc.method, tc.pq, "new body", tc.hdr)
	}

	// Nothing was lost on the way, and what is implemented still works.
	if got, _, err := f.get(t, "k", ""); err != nil || string(got) != "precious" {
		t.Errorf("object after the refusals: %q, %v", got, err)
	}
	if status, _ := c.do("DELETE", "/bkt/k?versionId=null", "", nil); status != http.StatusNoContent {
		t.Errorf("delete of the null version: %d", status)
	}
	if status, _ := c.do("DELETE", "/empty", "", nil); status != http.StatusNoContent {
		t.Errorf("delete of an empty bucket: %d", status)
	}
}

func signReq(t *testing.T, f *fixture, req *http.Request, payload string) {
	t.Helper()
	creds := aws.Credentials{AccessKeyID: f.srv.AccessKey, SecretAccessKey: f.srv.SecretKey}
	if err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).
		SignHTTP(context.Background(), creds, req, payload, "s3", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
}
