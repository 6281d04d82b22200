package s3server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The vectors below are the examples of the AWS Signature Version 4
// documentation for S3, so a pass means the check agrees with AWS, not
// merely with itself.
var exampleKeys = verifier{
	accessKey: "AKIAIOSFODNN7EXAMPLE",
	secretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	region:    "us-east-1",
	now:       func() time.Time { return time.Date(2013, 5, 24, 0, 1, 0, 0, time.UTC) },
}

func exampleGet() *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/test.txt", nil)
	r.Host = "examplebucket.s3.amazonaws.com"
	r.Header.Set("Range", "bytes=0-9")
	r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"+
		"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"+
		"Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
	return r
}

func authCode(err error) string {
	var ae *authError
	if errors.As(err, &ae) {
		return ae.code
	}
	return ""
}

func TestVerifyAWSExampleGet(t *testing.T) {
	v := exampleKeys
	if err := v.verify(exampleGet()); err != nil {
		t.Fatalf("the AWS example GET is rejected: %v", err)
	}

	r := exampleGet()
	r.Header.Set("Range", "bytes=0-10") // not what was signed
	if got := authCode(v.verify(r)); got != "SignatureDoesNotMatch" {
		t.Errorf("tampered header: %q", got)
	}
	r = exampleGet()
	r.Host = "otherbucket.s3.amazonaws.com"
	if got := authCode(v.verify(r)); got != "SignatureDoesNotMatch" {
		t.Errorf("tampered host: %q", got)
	}
	r = exampleGet()
	r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "AKIAIOSFODNN7EXAMPLE", "AKIAOTHER", 1))
	if got := authCode(v.verify(r)); got != "InvalidAccessKeyId" {
		t.Errorf("unknown key id: %q", got)
	}
	wrong := v
	wrong.secretKey = "not-the-secret"
	if got := authCode(wrong.verify(exampleGet())); got != "SignatureDoesNotMatch" {
		t.Errorf("wrong secret: %q", got)
	}
	late := v
	late.now = func() time.Time { return time.Date(2013, 5, 24, 1, 0, 0, 0, time.UTC) }
	if got := authCode(late.verify(exampleGet())); got != "RequestTimeTooSkewed" {
		t.Errorf("an hour late: %q", got)
	}
	r = exampleGet()
	r.Header.Del("Authorization")
	if got := authCode(v.verify(r)); got != "AccessDenied" {
		t.Errorf("anonymous: %q", got)
	}
	// Signature Version 2 headers are checked too.
	r = exampleGet()
	r.Header.Del("X-Amz-Date")
	r.Header.Set("Date", "Fri, 24 May 2013 00:00:00 GMT")
	r.Header.Set("Authorization", "AWS AKIAIOSFODNN7EXAMPLE:c2lnbmF0dXJl")
	if got := authCode(v.verify(r)); got != "SignatureDoesNotMatch" {
		t.Errorf("signature version 2, wrong signature: %q", got)
	}
	r.Header.Del("Date")
	if got := authCode(v.verify(r)); got != "AccessDenied" {
		t.Errorf("signature version 2 without a date: %q", got)
	}
}

// exampleChunked is the AWS example of a signed streaming upload: 66560
// bytes of 'a' in chunks of 65536, 1024 and 0 bytes.
func exampleChunked(corrupt bool) *http.Request {
	var body bytes.Buffer
	for _, c := range []struct {
		size int
		sig  string
	}{
		{65536, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"},
		{1024, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"},
		{0, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"},
	} {
		body.WriteString(strconv.FormatInt(int64(c.size), 16) + ";chunk-signature=" + c.sig + "\r\n")
		data := bytes.Repeat([]byte("a"), c.size)
		if corrupt && c.size == 1024 {
			data[100] = 'b'
		}
		body.Write(data)
		body.WriteString("\r\n")
	}
	r := httptest.NewRequest(http.MethodPut, "/examplebucket/chunkObject.txt", bytes.NewReader(body.Bytes()))
	r.Host = "s3.amazonaws.com"
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("Content-Length", strconv.Itoa(body.Len()))
	r.Header.Set("X-Amz-Content-Sha256", streamingSigned)
	r.Header.Set("X-Amz-Date", "20130524T000000Z")
	r.Header.Set("X-Amz-Decoded-Content-Length", "66560")
	r.Header.Set("X-Amz-Storage-Class", "REDUCED_REDUNDANCY")
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"+
		"SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,"+
		"Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
	return r
}

func TestVerifyAWSExampleChunkedUpload(t *testing.T) {
	v := exampleKeys
	if n := exampleChunked(false).ContentLength; n != 66824 {
		t.Fatalf("the example body is %d bytes, the documentation says 66824", n)
	}
	r := exampleChunked(false)
	if err := v.verify(r); err != nil {
		t.Fatalf("the AWS example upload is rejected: %v", err)
	}
	if r.ContentLength != 66560 || r.Header.Get("Content-Length") != "66560" || r.Header.Get("Content-Encoding") != "" {
		t.Errorf("decoded request: length %d / %q, encoding %q", r.ContentLength, r.Header.Get("Content-Length"), r.Header.Get("Content-Encoding"))
	}
	got, err := io.ReadAll(r.Body)
	if err != nil || !bytes.Equal(got, bytes.Repeat([]byte("a"), 66560)) {
		t.Fatalf("decoded %d bytes, err %v", len(got), err)
	}

	r = exampleChunked(true)
	if err := v.verify(r); err != nil {
		t.Fatalf("headers are intact, the seed signature must verify: %v", err)
	}
	if _, err := io.ReadAll(r.Body); err != errChunkSig {
		t.Errorf("a corrupted chunk: err %v, want the chunk signature error", err)
	}
}

func TestChunkReaderMalformed(t *testing.T) {
	for _, body := range []string{
		"5\r\nhello",               // ends inside the chunk framing
		"zz\r\nhello\r\n0\r\n\r\n", // bad size
		"5\r\nhelloXX0\r\n\r\n",    // no CRLF after data
		"3\r\nhello\r\n0\r\n\r\n",  // size smaller than data
		strings.Repeat("1", 70000), // no line end
	} {
		cr := &chunkReader{br: newTestReader(body), body: io.NopCloser(nil), trailer: true, declared: 5}
		if _, err := io.ReadAll(cr); err == nil {
			t.Errorf("%.20q: decoded without error", body)
		}
	}
	const withTrailer = "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"
	cr := &chunkReader{br: newTestReader(withTrailer), body: io.NopCloser(nil), trailer: true, expect: "x-amz-checksum-crc32", declared: 5}
	if b, err := io.ReadAll(cr); err != nil || string(b) != "hello" {
		t.Errorf("unsigned chunks with a trailer: %q, %v", b, err)
	}
	// A trailer other than the announced one, or none when one was, is
	// malformed, as from S3.
	for _, c := range []struct{ body, expect string }{
		{withTrailer, ""},
		{withTrailer, "x-amz-checksum-crc64nvme"},
		{"5\r\nhello\r\n0\r\n\r\n", "x-amz-checksum-crc32"},
		{"5\r\nhello\r\n0\r\n:AAAAAA==\r\n\r\n", "x-amz-checksum-crc32"},
	} {
		cr := &chunkReader{br: newTestReader(c.body), body: io.NopCloser(nil), trailer: true, expect: c.expect, declared: 5}
		if _, err := io.ReadAll(cr); err != errMalformedTrailer {
			t.Errorf("%q announcing %q: err %v, want %v", c.body, c.expect, err, errMalformedTrailer)
		}
	}
	// The chunks must add up to the declared length.
	for _, n := range []int64{4, 6} {
		cr := &chunkReader{br: newTestReader("5\r\nhello\r\n0\r\n\r\n"), body: io.NopCloser(nil), declared: n}
		if _, err := io.ReadAll(cr); err != errShortBody {
			t.Errorf("5 bytes declared as %d: err %v, want %v", n, err, errShortBody)
		}
	}
	// Every chunk but the last is at least 8 KiB.
	small := "a\r\n" + strings.Repeat("x", 10) + "\r\n5\r\nhello\r\n0\r\n\r\n"
	cr = &chunkReader{br: newTestReader(small), body: io.NopCloser(nil), trailer: true, declared: 15}
	if _, err := io.ReadAll(cr); err != errChunkSize {
		t.Errorf("a 10-byte chunk before another: err %v, want %v", err, errChunkSize)
	}
}

func newTestReader(s string) *bufio.Reader { return bufio.NewReaderSize(strings.NewReader(s), 64<<10) }

// The chunk decoder reads bytes from the network: whatever they are, it
// must fail cleanly or yield no more than was declared, never panic.
func FuzzChunkReader(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), uint8(0))
	f.Add([]byte("5\r\nhello\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"), uint8(1))
	f.Add([]byte("5;chunk-signature=00\r\nhello\r\n0;chunk-signature=00\r\n\r\n"), uint8(0))
	f.Add([]byte("5;chunk-signature=00\r\nhello\r\n0;chunk-signature=00\r\nx-amz-checksum-crc32:AAAAAA==\r\nx-amz-trailer-signature:00\r\n\r\n"), uint8(2))
	f.Add([]byte("ffffffffffffffff\r\n"), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		// mode 0: signed chunks; 1: unsigned with trailers; 2: signed with trailers.
		var sig *chunkSigner
		if mode%3 != 1 {
			sig = &chunkSigner{key: []byte("k"), amzDate: "20130524T000000Z", scope: "20130524/us-east-1/s3/aws4_request", prev: "seed"}
		}
		cr := &chunkReader{br: bufio.NewReaderSize(bytes.NewReader(body), 64<<10), body: io.NopCloser(nil), sig: sig, trailer: mode%3 != 0, trailers: http.Header{}, declared: int64(len(body))}
		n, _ := io.Copy(io.Discard, cr)
		if n > int64(len(body)) {
			t.Fatalf("decoded %d bytes from a %d byte body", n, len(body))
		}
	})
}

// Authorization headers and presigned queries come from anyone.
func FuzzVerify(f *testing.F) {
	f.Add(exampleGet().Header.Get("Authorization"), "", "20130524T000000Z")
	f.Add("AWS4-HMAC-SHA256 Credential=/////,SignedHeaders=;;,Signature=", "", "x")
	f.Add("", "X-Amz-Signature=00&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=a/b/c/s3/aws4_request&X-Amz-Date=2&X-Amz-Expires=9", "")
	f.Add("AWS AKIAIOSFODNN7EXAMPLE:c2lnbmF0dXJl", "", "Fri, 24 May 2013 00:00:00 GMT")
	f.Add("", "AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1369353600&Signature=c2ln", "")
	f.Fuzz(func(t *testing.T, auth, query, date string) {
		r := httptest.NewRequest(http.MethodGet, "/b/k", nil)
		r.URL.RawQuery = query
		r.Header.Set("Authorization", auth)
		r.Header.Set("X-Amz-Date", date)
		r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
		v := exampleKeys
		if err := v.verify(r); err == nil && auth != exampleGet().Header.Get("Authorization") {
			t.Fatalf("accepted auth %q query %q", auth, query)
		}
	})
}

// The query-string authentication example of the S3 Signature Version 2
// documentation (virtual-host "johnsmith" bucket, here path-style, which
// signs the same resource).
func TestVerifyV2PresignedExample(t *testing.T) {
	v := exampleKeys
	v.now = func() time.Time { return time.Unix(1175139620-60, 0) }
	const url = "/johnsmith/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1175139620&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D"
	if err := v.verify(httptest.NewRequest(http.MethodGet, url, nil)); err != nil {
		t.Fatalf("the AWS example is rejected: %v", err)
	}
	if got := authCode(v.verify(httptest.NewRequest(http.MethodGet, strings.Replace(url, "puppy", "kitten", 1), nil))); got != "SignatureDoesNotMatch" {
		t.Errorf("another key: %q", got)
	}
	if got := authCode(v.verify(httptest.NewRequest(http.MethodPut, url, nil))); got != "SignatureDoesNotMatch" {
		t.Errorf("another method: %q", got)
	}
	v.now = func() time.Time { return time.Unix(1175139620+1, 0) }
	if got := authCode(v.verify(httptest.NewRequest(http.MethodGet, url, nil))); got != "AccessDenied" {
		t.Errorf("expired: %q", got)
	}
}

// The presigned GET of the AWS Signature Version 4 documentation.
func TestVerifyAWSExamplePresigned(t *testing.T) {
	const q = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request" +
		"&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host" +
		"&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
	req := func(query string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/test.txt?"+query, nil)
		r.Host = "examplebucket.s3.amazonaws.com"
		return r
	}
	v := exampleKeys
	if err := v.verify(req(q)); err != nil {
		t.Fatalf("the AWS example presigned GET is rejected: %v", err)
	}
	if got := authCode(v.verify(req(strings.Replace(q, "Expires=86400", "Expires=86401", 1)))); got != "SignatureDoesNotMatch" {
		t.Errorf("tampered expiry: %q", got)
	}
	if got := authCode(v.verify(req(q + "&uploads="))); got != "SignatureDoesNotMatch" {
		t.Errorf("added parameter: %q", got)
	}
	other := v
	other.region = "eu-west-1"
	if got := authCode(other.verify(req(q))); got != "AuthorizationQueryParametersError" {
		t.Errorf("signed for another region: %q", got)
	}
}
