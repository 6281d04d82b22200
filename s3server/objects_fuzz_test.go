package s3server

import (
	"math"
	"net/http"
	"net/url"
	"testing"
)

// Range headers come from anyone: a range it serves lies inside the
// object, whatever the header.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=-5", "bytes=5-", "bytes=0-1,2-3", "bytes=9-2", "bytes=-0", "bytes=99999999999999999999-", "items=1-2"} {
		f.Add(s, int64(10))
	}
	f.Fuzz(func(t *testing.T, s string, size int64) {
		if size <= 0 {
			return
		}
		start, length, ok, err := parseRange(s, size)
		if ok && (err != nil || start < 0 || length < 1 || start+length > size) {
			t.Fatalf("%q over %d bytes: start %d length %d err %v", s, size, start, length, err)
		}
	})
}

// So do copy sources and checksum headers: parsed or refused, never a
// panic, and a parsed source names a bucket and a key.
func FuzzCopySourceAndChecksum(f *testing.F) {
	f.Add("bkt/key", "crc32", "AAAAAA==")
	f.Add("/bkt/a%2Fb?versionId=null", "sha256", "")
	f.Add("%zz", "nope", "!!")
	f.Fuzz(func(t *testing.T, src, algo, value string) {
		if b, k, err := copySource(src); err == nil && (b == "" || k == "" || checkKey(k) != nil) {
			t.Fatalf("%q parsed as bucket %q key %q", src, b, k)
		}
		r, _ := http.NewRequest(http.MethodPut, "http://h/b/k", nil)
		r.Header.Set("X-Amz-Checksum-"+algo, value)
		r.Header.Set("X-Amz-Trailer", value)
		r.Header.Set("X-Amz-Sdk-Checksum-Algorithm", algo)
		if c, err := checksumOf(r); err == nil && c != nil && newChecksum(c.algo) == nil {
			t.Fatalf("accepted algorithm %q", c.algo)
		}
	})
}

// max-keys, max-uploads, max-parts and part-number-marker: a number in
// S3's range, or refused.
func FuzzMaxArg(f *testing.F) {
	for _, s := range []string{"0", "1000", "-3", "2736457823532448723", "invalid", "+5", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := maxArg(url.Values{"max-keys": {s}}, "max-keys", 1000)
		if err == nil && (n < 0 || n > math.MaxInt32) {
			t.Fatalf("%q parsed as %d", s, n)
		}
	})
}
