package s3server

import (
	"net/http"
	"sort"
	"strings"
)

// A router by method and path alone (gofakes3's, which this server used to
// have) serves a request for an operation it lacks as the plain one on the
// same path: PUT ?tagging overwrites the object with the tag XML, DELETE
// ?policy deletes the bucket. The filter below lets through
// only the operations this server implements, recognised by method, path
// and every query parameter, and answers anything else 501 NotImplemented
// without reading the body or touching a file. Allowing what is known,
// rather than refusing a list of subresources, keeps a subresource S3 adds
// tomorrow from becoming a write.

// target is what the path names.
type target int

const (
	service target = iota // "/"
	bucket                // "/b" or "/b/"
	object                // "/b/key"
)

func targetOf(path string) target {
	p := strings.TrimPrefix(path, "/")
	if p == "" {
		return service
	}
	b, key, _ := strings.Cut(p, "/")
	if b == "" || key == "" {
		return bucket
	}
	return object
}

// operation is one implemented S3 operation: the method and target it is
// sent to, the query parameter that selects it (if any), and the other
// query parameters it accepts.
type operation struct {
	name     string
	method   string
	target   target
	selector string   // "" for the plain operation on the path
	needs    []string // further parameters that must all be present
	params   []string
}

var (
	getObjectParams = []string{"partNumber", "versionId",
		"response-cache-control", "response-content-disposition", "response-content-encoding",
		"response-content-language", "response-content-type", "response-expires"}

	// From the S3 API reference, the operations this package serves. Everything else (ACLs, policies, tagging, object lock,
	// versioning, lifecycle, CORS, website, POST form uploads, select,
	// restore, ...) is 501.
	operations = []operation{
		{name: "ListBuckets", method: "GET", target: service,
			params: []string{"max-buckets", "continuation-token", "prefix", "bucket-region"}},

		{name: "ListObjects", method: "GET", target: bucket,
			params: []string{"list-type", "prefix", "delimiter", "encoding-type", "marker", "max-keys",
				"continuation-token", "fetch-owner", "start-after"}},
		{name: "GetBucketLocation", method: "GET", target: bucket, selector: "location"},
		{name: "ListMultipartUploads", method: "GET", target: bucket, selector: "uploads",
			params: []string{"delimiter", "encoding-type", "key-marker", "max-uploads", "prefix", "upload-id-marker"}},
		{name: "HeadBucket", method: "HEAD", target: bucket},
		{name: "CreateBucket", method: "PUT", target: bucket},
		{name: "DeleteBucket", method: "DELETE", target: bucket},
		{name: "DeleteObjects", method: "POST", target: bucket, selector: "delete"},

		{name: "GetObject", method: "GET", target: object, params: getObjectParams},
		{name: "GetObjectAttributes", method: "GET", target: object, selector: "attributes", params: []string{"versionId"}},
		{name: "HeadObject", method: "HEAD", target: object, params: getObjectParams},
		{name: "ListParts", method: "GET", target: object, selector: "uploadId",
			params: []string{"max-parts", "part-number-marker", "encoding-type"}},
		{name: "PutObject", method: "PUT", target: object}, // and CopyObject
		{name: "UploadPart", method: "PUT", target: object, selector: "uploadId", needs: []string{"partNumber"}},
		{name: "DeleteObject", method: "DELETE", target: object, params: []string{"versionId"}},
		{name: "AbortMultipartUpload", method: "DELETE", target: object, selector: "uploadId"},
		{name: "CreateMultipartUpload", method: "POST", target: object, selector: "uploads"},
		{name: "CompleteMultipartUpload", method: "POST", target: object, selector: "uploadId"},
	}
)

// selectors are the query parameters that pick an operation; one of them
// on a request means that operation and no other.
var selectors = func() map[string]bool {
	m := map[string]bool{}
	for _, op := range operations {
		if op.selector != "" {
			m[op.selector] = true
		}
	}
	return m
}()

// anyParam reports query parameters every operation accepts: the SDKs'
// operation hint and the presigned-URL signature parameters (checked by
// the verifier; Signature Version 2 ones too).
func anyParam(k string) bool {
	return k == "x-id" || k == "AWSAccessKeyId" || k == "Signature" || k == "Expires" ||
		len(k) > 6 && strings.EqualFold(k[:6], "x-amz-")
}

// match finds the operation a request asks for; "" and the first
// parameter it does not implement when there is none.
func match(r *http.Request) (string, string) {
	q := r.URL.Query()
	t := targetOf(r.URL.Path)
	var keys []string
	for k := range q {
		if !anyParam(k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	sel := ""
	for _, k := range keys {
		if selectors[k] {
			sel = k
			break
		}
	}
next:
	for _, op := range operations {
		if op.method != r.Method || op.target != t || op.selector != sel {
			continue
		}
		for _, n := range op.needs {
			if !q.Has(n) {
				continue next
			}
		}
		for _, k := range keys {
			if k != op.selector && !contains(op.needs, k) && !contains(op.params, k) {
				return "", k
			}
		}
		return op.name, ""
	}
	if sel == "" && len(keys) > 0 {
		return "", keys[0]
	}
	return "", sel
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unsupportedHeader names a request header that asks for a feature this
// server does not have (object lock, tags, ACL grants, customer or KMS
// encryption), where serving the rest of the request would drop what the
// client relies on.
func unsupportedHeader(r *http.Request) string {
	h := r.Header
	for _, k := range []string{
		"X-Amz-Object-Lock-Mode", "X-Amz-Object-Lock-Retain-Until-Date", "X-Amz-Object-Lock-Legal-Hold",
		"X-Amz-Tagging",
		"X-Amz-Grant-Read", "X-Amz-Grant-Write", "X-Amz-Grant-Read-Acp", "X-Amz-Grant-Write-Acp", "X-Amz-Grant-Full-Control",
		"X-Amz-Server-Side-Encryption-Customer-Algorithm", "X-Amz-Copy-Source-Server-Side-Encryption-Customer-Algorithm",
		"X-Amz-Server-Side-Encryption-Aws-Kms-Key-Id",
	} {
		if h.Get(k) != "" {
			return k
		}
	}
	// Canned ACLs that grant nothing beyond the owner are what S3 itself
	// accepts on buckets without ACLs; any other is a grant.
	if acl := h.Get("X-Amz-Acl"); acl != "" && acl != "private" && acl != "bucket-owner-full-control" {
		return "X-Amz-Acl: " + acl
	}
	if sse := h.Get("X-Amz-Server-Side-Encryption"); sse != "" && sse != "AES256" {
		return "X-Amz-Server-Side-Encryption: " + sse
	}
	if v := h.Get("X-Amz-Tagging-Directive"); v != "" && !strings.EqualFold(v, "COPY") {
		return "X-Amz-Tagging-Directive: " + v
	}
	// S3's conditional writes know If-Match, or If-None-Match: *, not both.
	if inm := h.Get("If-None-Match"); inm != "" && (r.Method == http.MethodPut || r.Method == http.MethodPost) &&
		(inm != "*" || h.Get("If-Match") != "") {
		return "If-None-Match: " + inm
	}
	if strings.EqualFold(h.Get("X-Amz-Bucket-Object-Lock-Enabled"), "true") {
		return "X-Amz-Bucket-Object-Lock-Enabled"
	}
	return ""
}

// onlyImplemented answers 501 to every request for an operation this
// server does not implement, before anything reads the body.
func onlyImplemented(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete:
		default:
			// OPTIONS too: CORS cannot be configured here, so a browser
			// preflight has nothing to allow.
			writeError(w, r, http.StatusNotImplemented, "NotImplemented", "method "+r.Method+" is not implemented by this server")
			return
		}
		name, param := match(r)
		if name == "" {
			what := r.Method + " " + describe(targetOf(r.URL.Path))
			if param != "" {
				what += " ?" + param
			}
			writeError(w, r, http.StatusNotImplemented, "NotImplemented",
				"A header or query you provided implies functionality that is not implemented: "+what)
			return
		}
		if v := r.URL.Query().Get("versionId"); v != "" && v != "null" {
			writeError(w, r, http.StatusNotImplemented, "NotImplemented", "versioning is not implemented by this server")
			return
		}
		if h := unsupportedHeader(r); h != "" {
			name, _, _ := strings.Cut(h, ":")
			writeError(w, r, http.StatusNotImplemented, "NotImplemented",
				"A header you provided implies functionality that is not implemented.", "Header", name)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func describe(t target) string {
	switch t {
	case service:
		return "on the service"
	case bucket:
		return "on a bucket"
	}
	return "on an object"
}
