package store_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/sluice-data/sluice/store"
)

var credentialRegion = regexp.MustCompile(`Credential=[^/]+/[^/]+/([^/]+)/`)

// wrongRegionServer stands in front of an S3 endpoint as S3 does for a
// bucket that lives in home: a request signed for another region gets the
// answer naming home (style "redirect": 301 PermanentRedirect with
// x-amz-bucket-region; style "malformed": 400 AuthorizationHeaderMalformed
// with <Region> in the body, and the header on HEADs, which have no body).
// Requests signed for home go through.
func wrongRegionServer(t *testing.T, backend, home, style string) (*httptest.Server, *atomic.Int32) {
	rp := proxy(t, backend)
	var refused atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := credentialRegion.FindStringSubmatch(r.Header.Get("Authorization"))
		if m == nil || m[1] == home {
			rp.ServeHTTP(w, r)
			return
		}
		refused.Add(1)
		w.Header().Set("Content-Type", "application/xml")
		var body string
		switch style {
		case "redirect":
			w.Header().Set("x-amz-bucket-region", home)
			w.WriteHeader(http.StatusMovedPermanently)
			body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint. Please send all future requests to this endpoint.</Message><Endpoint>s3.` + home + `.amazonaws.com</Endpoint></Error>`
		default:
			if r.Method == http.MethodHead {
				w.Header().Set("x-amz-bucket-region", home)
			}
			w.WriteHeader(http.StatusBadRequest)
			body = fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AuthorizationHeaderMalformed</Code><Message>The authorization header is malformed; the region '%s' is wrong; expecting '%s'</Message><Region>%s</Region></Error>`, m[1], home, home)
		}
		if r.Method != http.MethodHead {
			w.Write([]byte(body))
		}
	}))
	t.Cleanup(ts.Close)
	return ts, &refused
}

// A bucket in another region than the client's is found from the
// server's answer, and every later request goes there at once. The
// answers come from a proxy in front of the server (MinIO accepts any
// region unless configured with one).
func TestS3WrongRegion(t *testing.T) {
	forEachS3(t, testWrongRegion)
}

func testWrongRegion(t *testing.T, tg s3Target) {
	for _, style := range []string{"redirect", "malformed"} {
		for _, first := range []string{"list", "stat", "read", "write"} {
			t.Run(style+"/"+first, func(t *testing.T) {
				ts, refused := wrongRegionServer(t, tg.endpoint, "us-east-1", style)
				st := s3Target{endpoint: ts.URL, accessKey: tg.accessKey, secretKey: tg.secretKey}.open(t, tg.bucket,
					func(o *store.Options) { o.Region = "eu-west-1" })
				ctx := context.Background()
				key := "region/" + style + "-" + first
				// The object exists beforehand, written around the proxy.
				direct := tg.open(t, tg.bucket)
				if _, err := direct.Put(ctx, key, bytes.NewReader([]byte("x")), store.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
				var err error
				switch first {
				case "list":
					_, err = st.List(ctx, "region/")
				case "stat":
					_, err = st.Stat(ctx, key)
				case "read":
					_, err = st.ReadAll(ctx, key)
				case "write":
					_, err = st.Put(ctx, key, bytes.NewReader([]byte("y")), store.WriteOptions{})
				}
				if err != nil {
					t.Fatalf("%s, the first request: %v", first, err)
				}
				if n := refused.Load(); n < 1 || n > 2 {
					t.Fatalf("%d requests refused for their region, want the first (and a HEAD of the bucket at most)", n)
				}
				before := refused.Load()
				// Everything else goes to the bucket's region directly,
				// multipart uploads included.
				big := bytes.Repeat([]byte("0123456789abcdef"), (11<<20)/16)
				if _, err := st.Put(ctx, key+"-big", bytes.NewReader(big), store.WriteOptions{PartSize: 5 << 20}); err != nil {
					t.Fatal(err)
				}
				got, err := st.ReadAll(ctx, key+"-big")
				if err != nil || !bytes.Equal(got, big) {
					t.Fatalf("read back %d bytes, %v", len(got), err)
				}
				if _, err := st.List(ctx, "region/"); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{key, key + "-big"} {
					if err := st.Delete(ctx, k); err != nil {
						t.Fatal(err)
					}
				}
				if n := refused.Load(); n != before {
					t.Errorf("%d more requests went to the wrong region after it was learned", n-before)
				}
			})
		}
	}
}
