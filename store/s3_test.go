package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/internal/await"
	"github.com/sluice-data/sluice/internal/retry"
	"github.com/sluice-data/sluice/internal/testenv"
	"github.com/sluice-data/sluice/s3server"
	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// s3Target is an S3 endpoint the tests may write into.
type s3Target struct {
	endpoint, accessKey, secretKey, bucket string
}

func (tg s3Target) open(t testing.TB, bucket string, mod ...func(*store.Options)) *store.Store {
	t.Helper()
	opts := store.Options{Endpoint: tg.endpoint, AccessKeyID: tg.accessKey, SecretAccessKey: tg.secretKey}
	for _, f := range mod {
		f(&opts)
	}
	st, key, err := store.Open(context.Background(), "s3://"+bucket+"/", opts)
	if err != nil || key != "" {
		t.Fatalf("open s3://%s/: key %q, %v", bucket, key, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// client is a raw SDK client, for what the store hides: buckets and
// pending multipart uploads.
func (tg s3Target) client(t testing.TB) *s3.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(tg.endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(tg.accessKey, tg.secretKey, ""),
		HTTPClient:   &http.Client{Transport: tr},
	})
}

// embedded starts the embedded S3 endpoint over a temporary directory.
func embedded(t testing.TB) s3Target {
	t.Helper()
	srv, err := s3server.Start(t.Context(), t.TempDir(), "127.0.0.1:0", s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.CreateBucket("sluice-test"); err != nil {
		t.Fatal(err)
	}
	return s3Target{srv.Endpoint, srv.AccessKey, srv.SecretKey, "sluice-test"}
}

// minio is the MinIO that ./scripts/test starts. Without it the tests
// skip, except under CI, where skipping would hide that the real-server
// tests never ran.
func minio(t testing.TB) s3Target {
	t.Helper()
	tg := s3Target{
		endpoint:  os.Getenv("SLUICE_TEST_S3_ENDPOINT"),
		accessKey: os.Getenv("AWS_ACCESS_KEY_ID"),
		secretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		bucket:    os.Getenv("SLUICE_TEST_S3_BUCKET"),
	}
	if tg.endpoint == "" {
		testenv.Unavailable(t, "SLUICE_TEST_S3_ENDPOINT is not set; ./scripts/test runs these against MinIO")
	}
	if tg.accessKey == "" || tg.secretKey == "" {
		t.Fatal("SLUICE_TEST_S3_ENDPOINT is set but AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY are not")
	}
	if tg.bucket == "" {
		tg.bucket = "sluice-test"
	}
	ctx := context.Background()
	c := tg.client(t)
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &tg.bucket}); err != nil {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &tg.bucket}); err != nil {
			t.Fatalf("create bucket %s on %s: %v", tg.bucket, tg.endpoint, err)
		}
	}
	return tg
}

func TestConformanceS3Embedded(t *testing.T) {
	tg := embedded(t)
	storetest.Run(t, func(t *testing.T) *store.Store { return tg.open(t, tg.bucket) })
}

func TestConformanceS3MinIO(t *testing.T) {
	tg := minio(t)
	storetest.Run(t, func(t *testing.T) *store.Store { return tg.open(t, tg.bucket) })
}

// forEachS3 runs an S3-specific test on the embedded endpoint and, when
// configured, on MinIO.
func forEachS3(t *testing.T, fn func(t *testing.T, tg s3Target)) {
	t.Run("embedded", func(t *testing.T) { fn(t, embedded(t)) })
	t.Run("minio", func(t *testing.T) { fn(t, minio(t)) })
}

func oneLine(t *testing.T, err error) string {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error spans lines: %q", msg)
	}
	return msg
}

func TestS3WrongCredentials(t *testing.T) {
	forEachS3(t, func(t *testing.T, tg s3Target) {
		ctx := context.Background()
		for _, c := range []struct {
			name, ak, sk, hint string
		}{
			{"secret", tg.accessKey, "wrong-secret", "AWS_SECRET_ACCESS_KEY"},
			{"key id", "NOSUCHKEYID", tg.secretKey, "AWS_ACCESS_KEY_ID"},
		} {
			st := tg.open(t, tg.bucket, func(o *store.Options) { o.AccessKeyID, o.SecretAccessKey = c.ak, c.sk })
			_, err := st.List(ctx, "")
			if store.KindOf(err) != store.KindPermission {
				t.Fatalf("%s: list with wrong credentials: kind %v, err %v", c.name, store.KindOf(err), err)
			}
			msg := oneLine(t, err)
			if !strings.HasPrefix(msg, "list s3://"+tg.bucket+"/: ") || !strings.Contains(msg, c.hint) {
				t.Errorf("%s: message %q should name the operation and point at %s", c.name, msg, c.hint)
			}
			_, err = st.Stat(ctx, "some/key")
			if store.KindOf(err) != store.KindPermission {
				t.Errorf("%s: stat with wrong credentials: kind %v, err %v", c.name, store.KindOf(err), err)
			}
		}
	})
}

func TestS3MissingBucket(t *testing.T) {
	forEachS3(t, func(t *testing.T, tg s3Target) {
		ctx := context.Background()
		st := tg.open(t, "no-such-bucket-sluice")
		want := `bucket "no-such-bucket-sluice" does not exist`
		_, err := st.List(ctx, "")
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("list: %v, want not found", err)
		}
		if got := oneLine(t, err); got != "list s3://no-such-bucket-sluice/: "+want {
			t.Errorf("list: message %q", got)
		}
		_, _, err = st.ReadRange(ctx, "k", store.All(), store.ReadOptions{})
		if got := oneLine(t, err); !errors.Is(err, store.ErrNotFound) || got != "read s3://no-such-bucket-sluice/k: "+want {
			t.Errorf("read: %q", got)
		}
		// HEAD has no body to say which is missing; the message must still.
		_, err = st.Stat(ctx, "k")
		if got := oneLine(t, err); !errors.Is(err, store.ErrNotFound) || got != "stat s3://no-such-bucket-sluice/k: "+want {
			t.Errorf("stat: %q", got)
		}
		_, err = st.Put(ctx, "k", strings.NewReader("x"), store.WriteOptions{})
		if !errors.Is(err, store.ErrNotFound) || !strings.Contains(oneLine(t, err), want) {
			t.Errorf("put: %v", err)
		}
	})
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestS3UnreachableEndpoint(t *testing.T) {
	ep := "http://" + closedPort(t)
	tg := s3Target{endpoint: ep, accessKey: "k", secretKey: "s"}
	st := tg.open(t, "b")
	start := time.Now()
	_, err := st.Stat(context.Background(), "k")
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v to report an unreachable endpoint; it is not worth retrying", el)
	}
	if store.KindOf(err) != store.KindPermanent {
		t.Errorf("kind %v, want permanent: %v", store.KindOf(err), err)
	}
	want := "stat s3://b/k: endpoint " + ep + " unreachable (connection refused)"
	if got := oneLine(t, err); got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}

func TestS3BadEndpointURL(t *testing.T) {
	_, _, err := store.Open(context.Background(), "s3://b/", store.Options{Endpoint: "127.0.0.1:9000"})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(oneLine(t, err), "not a URL") {
		t.Errorf("endpoint without a scheme: %v", err)
	}
}

// A throttling server gets the SDK's modest retries (3 attempts), then a
// retryable error with a one-line message.
func TestS3Throttled(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		slowDown(w, r)
	}))
	defer srv.Close()
	st := s3Target{endpoint: srv.URL, accessKey: "k", secretKey: "s"}.open(t, "b")
	_, _, err := st.ReadRange(context.Background(), "k", store.Range{Off: 0, Len: 10}, store.ReadOptions{})
	if !store.IsRetryable(err) {
		t.Fatalf("kind %v, want retryable: %v", store.KindOf(err), err)
	}
	if got := oneLine(t, err); got != "read s3://b/k: throttled by the server (503 SlowDown): retry later" {
		t.Errorf("message %q", got)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}

	// A caller that retries above the store asks for one attempt, so
	// that retries do not multiply.
	calls.Store(0)
	st = s3Target{endpoint: srv.URL, accessKey: "k", secretKey: "s"}.open(t, "b", func(o *store.Options) { o.Attempts = 1 })
	_, _, err = st.ReadRange(context.Background(), "k", store.Range{Off: 0, Len: 10}, store.ReadOptions{})
	if !store.IsRetryable(err) {
		t.Fatalf("kind %v, want retryable: %v", store.KindOf(err), err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d attempts with Attempts 1, want 1", n)
	}
}

func pendingUploads(t *testing.T, tg s3Target, key string) int {
	t.Helper()
	out, err := tg.client(t).ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &tg.bucket, Prefix: &key})
	if err != nil {
		t.Fatalf("list multipart uploads: %v", err)
	}
	return len(out.Uploads)
}

func TestS3AbortLeavesNoUpload(t *testing.T) {
	forEachS3(t, func(t *testing.T, tg s3Target) {
		st := tg.open(t, tg.bucket)
		key := fmt.Sprintf("abort-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
		big := make([]byte, 12<<20)

		w, err := st.NewWriter(context.Background(), key, store.WriteOptions{PartSize: 5 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(big); err != nil {
			t.Fatal(err)
		}
		if n := pendingUploads(t, tg, key); n != 1 {
			t.Fatalf("%d multipart uploads in progress, want 1 (is the write multipart?)", n)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if n := pendingUploads(t, tg, key); n != 0 {
			t.Errorf("%d multipart uploads left after Abort", n)
		}
		if _, err := st.Stat(context.Background(), key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("object visible after Abort: %v", err)
		}

		// Cancelling the context aborts too, even if the caller never
		// calls Close or Abort.
		ctx, cancel := context.WithCancel(context.Background())
		w, err = st.NewWriter(ctx, key, store.WriteOptions{PartSize: 5 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(big); err != nil {
			t.Fatal(err)
		}
		cancel()
		// Polled: the abort runs in the background, and says nothing.
		deadline := time.Now().Add(10 * time.Second)
		for pendingUploads(t, tg, key) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("multipart upload still pending 10s after its context was cancelled")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err := w.Close(); !errors.Is(err, context.Canceled) {
			t.Errorf("Close after cancel: %v, want context.Canceled", err)
		}
	})
}

// The benchmarks move one 64 MiB object: reads as 8 concurrent 8 MiB
// ranges (the way fetch reads), writes as a multipart upload of 8 MiB
// parts, 4 at a time.
const (
	benchSize  = 64 << 20
	benchRange = 8 << 20
)

func benchTargets(b *testing.B, fn func(b *testing.B, st *store.Store)) {
	b.Run("embedded", func(b *testing.B) {
		tg := embedded(b)
		fn(b, tg.open(b, tg.bucket))
	})
	b.Run("minio", func(b *testing.B) {
		tg := minio(b)
		fn(b, tg.open(b, tg.bucket))
	})
}

func BenchmarkS3Read(b *testing.B) {
	benchTargets(b, func(b *testing.B, st *store.Store) {
		ctx := context.Background()
		key := fmt.Sprintf("bench-read-%d", time.Now().UnixNano())
		if _, err := st.Put(ctx, key, bytes.NewReader(make([]byte, benchSize)), store.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		defer st.Delete(ctx, key)
		bufs := make([][]byte, benchSize/benchRange)
		for i := range bufs {
			bufs[i] = make([]byte, benchRange)
		}
		b.SetBytes(benchSize)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			var g errgroup.Group
			for i, buf := range bufs {
				g.Go(func() error {
					rc, _, err := st.ReadRange(ctx, key, store.Range{Off: int64(i) * benchRange, Len: benchRange}, store.ReadOptions{})
					if err != nil {
						return err
					}
					defer rc.Close()
					_, err = io.ReadFull(rc, buf)
					return err
				})
			}
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkS3Write(b *testing.B) {
	benchTargets(b, func(b *testing.B, st *store.Store) {
		ctx := context.Background()
		key := fmt.Sprintf("bench-write-%d", time.Now().UnixNano())
		defer st.Delete(ctx, key)
		data := make([]byte, benchSize)
		b.SetBytes(benchSize)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := st.Put(ctx, key, bytes.NewReader(data), store.WriteOptions{PartSize: benchRange, Concurrency: 4}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Without options, the standard chain finds the endpoint and the keys:
// AWS_ENDPOINT_URL and AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or a
// profile of the shared config files named by AWS_PROFILE.
func TestS3CredentialChain(t *testing.T) {
	tg := embedded(t)
	ctx := context.Background()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
		"AWS_REGION":                  "",
		"AWS_DEFAULT_REGION":          "",
		"AWS_PROFILE":                 "",
		"AWS_SESSION_TOKEN":           "",
		"AWS_ENDPOINT_URL_S3":         "",
		"AWS_ENDPOINT_URL":            tg.endpoint,
		"AWS_ACCESS_KEY_ID":           tg.accessKey,
		"AWS_SECRET_ACCESS_KEY":       tg.secretKey,
	} {
		t.Setenv(k, v)
	}
	check := func(name string) {
		t.Helper()
		st, _, err := store.Open(ctx, "s3://"+tg.bucket+"/", store.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer st.Close()
		if _, err := st.Put(ctx, "chain/"+name, strings.NewReader(name), store.WriteOptions{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	check("env")

	os.Unsetenv("AWS_ENDPOINT_URL")
	os.Unsetenv("AWS_ACCESS_KEY_ID")
	os.Unsetenv("AWS_SECRET_ACCESS_KEY")
	config := "[profile sluice]\nendpoint_url = " + tg.endpoint + "\n"
	creds := "[sluice]\naws_access_key_id = " + tg.accessKey + "\naws_secret_access_key = " + tg.secretKey + "\n"
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "credentials"), []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_PROFILE", "sluice")
	check("profile")

	// No credentials anywhere: a permission error that says what to set.
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ENDPOINT_URL", tg.endpoint)
	st, _, err := store.Open(ctx, "s3://"+tg.bucket+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.Stat(ctx, "k")
	if store.KindOf(err) != store.KindPermission || !strings.Contains(oneLine(t, err), "AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: kind %v, %v", store.KindOf(err), err)
	}
}

// A body that stalls or breaks mid-way is a retryable error with a
// one-line message, not a hang or a short object.
func TestS3BrokenBodies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"abc"`)
		w.Header().Set("Content-Length", "1000")
		w.Write(make([]byte, 10))
		w.(http.Flusher).Flush()
		switch r.URL.Path {
		case "/b/stall":
			<-r.Context().Done()
		case "/b/reset":
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}
	}))
	defer srv.Close()
	st := s3Target{endpoint: srv.URL, accessKey: "k", secretKey: "s"}.open(t, "b",
		func(o *store.Options) { o.StallTimeout = 200 * time.Millisecond })
	for _, c := range []struct{ key, msg string }{
		{"stall", "read s3://b/stall: connection stalled: no data for 200ms"},
		{"reset", "read s3://b/reset: connection to " + srv.URL + " closed mid-response"},
	} {
		rc, info, err := st.ReadRange(context.Background(), c.key, store.All(), store.ReadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.key, err)
		}
		if info.Size != 1000 || info.ETag != `"abc"` {
			t.Errorf("%s: info %+v", c.key, info)
		}
		_, err = io.ReadAll(rc)
		rc.Close()
		if !store.IsRetryable(err) {
			t.Errorf("%s: kind %v, want retryable: %v", c.key, store.KindOf(err), err)
			continue
		}
		if got := oneLine(t, err); got != c.msg {
			t.Errorf("%s: message %q, want %q", c.key, got, c.msg)
		}
	}
}

// Response headers come from the server: a Content-Range of any shape must
// give an error or a sane size, never a panic.
func FuzzS3ContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-9/20", "bytes */20", "bytes 0-9/*", "bytes 5-1/-3", "items 0-1/2", "bytes 0-9/99999999999999999999", ""} {
		f.Add(s, int64(10))
	}
	var hdr atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := hdr.Load().([2]string)
		if h[0] != "" {
			w.Header().Set("Content-Range", h[0])
		}
		w.Header().Set("Content-Length", h[1])
		w.WriteHeader(http.StatusPartialContent)
		n, _ := strconv.Atoi(h[1])
		w.Write(make([]byte, max(n, 0)))
	}))
	defer srv.Close()
	tg := s3Target{endpoint: srv.URL, accessKey: "k", secretKey: "s"}
	st, _, err := store.Open(context.Background(), "s3://b/", store.Options{Endpoint: tg.endpoint, AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	f.Fuzz(func(t *testing.T, contentRange string, length int64) {
		if length < 0 || length > 1<<16 || strings.ContainsAny(contentRange, "\r\n\x00") {
			return
		}
		hdr.Store([2]string{contentRange, strconv.FormatInt(length, 10)})
		rc, info, err := st.ReadRange(context.Background(), "k", store.Range{Off: 0, Len: 10}, store.ReadOptions{})
		if err != nil {
			return
		}
		defer rc.Close()
		if info.Size < 0 {
			t.Fatalf("Content-Range %q gave size %d", contentRange, info.Size)
		}
		io.Copy(io.Discard, rc)
	})
}

// An endpoint that is some other HTTP server (a web page where S3 was
// expected) is named as such, in one line.
func TestS3NotAnS3Server(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!DOCTYPE html>\n<html><head><meta charset=utf-8></head><body>hello</body></html>\n"))
	}))
	defer srv.Close()
	st := s3Target{endpoint: srv.URL, accessKey: "k", secretKey: "s"}.open(t, "b")
	_, err := st.List(context.Background(), "")
	if err == nil {
		t.Fatal("a web page was taken for a listing")
	}
	if got, want := oneLine(t, err), "endpoint "+srv.URL+" does not answer as an S3 server"; !strings.Contains(got, want) {
		t.Errorf("message %q, want it to say %q", got, want)
	}
}

// With Attempts 1 (a caller that retries whole requests itself), the
// parts of a multipart upload still get the SDK's retries: no caller can
// retry one part. Everything else makes one attempt.
func TestS3PartsKeepRetries(t *testing.T) {
	var th throttler
	st := th.open(t)
	ctx := context.Background()

	th.throttle.Store(2) // the first part's first two tries
	big := bytes.Repeat([]byte("sluice!!"), (11<<20)/8)
	if _, err := st.Put(ctx, "parts/big", bytes.NewReader(big), store.WriteOptions{PartSize: 5 << 20, Concurrency: 1}); err != nil {
		t.Fatalf("multipart upload with two throttled part tries: %v", err)
	}
	if n := th.partPuts.Load(); n != 3+2 {
		t.Errorf("%d part uploads, want 3 parts + 2 retries", n)
	}
	got, err := st.ReadAll(ctx, "parts/big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d bytes: %v", len(got), err)
	}

	th.throttle.Store(1)
	_, err = st.Put(ctx, "parts/small", strings.NewReader("x"), store.WriteOptions{})
	if !store.IsRetryable(err) || th.puts.Load() != 1 {
		t.Errorf("single PUT throttled once: %d tries, %v; want 1 try and a retryable error", th.puts.Load(), err)
	}
}

// TestS3StoredCountsWhatTheServerTook: WriteOptions.Stored counts a part
// once it is uploaded and a small object once it is put, never bytes only
// buffered, so a progress display shows the rate the server takes them at.
func TestS3StoredCountsWhatTheServerTook(t *testing.T) {
	forEachS3(t, func(t *testing.T, tg s3Target) {
		st := tg.open(t, tg.bucket)
		for _, size := range []int64{1 << 20, 12 << 20} {
			key := fmt.Sprintf("stored-%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "-"), size, time.Now().UnixNano())
			var stored atomic.Int64
			w, err := st.NewWriter(context.Background(), key, store.WriteOptions{PartSize: 5 << 20, Stored: func(n int64) { stored.Add(n) }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(make([]byte, size)); err != nil {
				t.Fatal(err)
			}
			// What is left of a part is in the writer's buffer only.
			if buffered, got := size%(5<<20), stored.Load(); got > size-buffered {
				t.Errorf("%d bytes: %d counted stored before Close, but %d are still buffered", size, got, buffered)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := stored.Load(); got != size {
				t.Errorf("%d bytes: %d counted stored after Close", size, got)
			}
			_ = st.Delete(context.Background(), key)
		}
	})
}

// A multipart upload with parts in flight together reads back byte for
// byte, and the store lists and aborts what a killed writer left.
func TestS3ParallelPartsAndUploads(t *testing.T) {
	forEachS3(t, func(t *testing.T, tg s3Target) {
		ctx := context.Background()
		st := tg.open(t, tg.bucket)
		prefix := fmt.Sprintf("uploads-%s-%d/", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())

		// 23 MiB of distinct bytes in 5 MiB parts, 4 at a time: five
		// parts, the last one short.
		want := make([]byte, 23<<20+12345)
		for i := range want {
			want[i] = byte(i*7 + i>>13)
		}
		n, err := st.Put(ctx, prefix+"big", bytes.NewReader(want), store.WriteOptions{PartSize: 5 << 20, Concurrency: 4, Size: int64(len(want))})
		if err != nil || n != int64(len(want)) {
			t.Fatalf("put: %d bytes, %v", n, err)
		}
		got, err := st.ReadAll(ctx, prefix+"big")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("read back %d bytes, not the %d written", len(got), len(want))
		}

		listUploads := func() []store.Upload {
			t.Helper()
			var ups []store.Upload
			if err := st.ListUploads(ctx, prefix, func(u store.Upload) error { ups = append(ups, u); return nil }); err != nil {
				t.Fatal(err)
			}
			return ups
		}
		// Cancelling mid-upload leaves no object and no pending upload.
		wctx, cancel := context.WithCancel(ctx)
		w, err := st.NewWriter(wctx, prefix+"cancelled", store.WriteOptions{PartSize: 5 << 20, Concurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(want); err != nil {
			t.Fatal(err)
		}
		if ups := listUploads(); len(ups) != 1 || ups[0].Key != prefix+"cancelled" {
			t.Fatalf("uploads mid-write: %+v, want the one of %scancelled", ups, prefix)
		}
		cancel()
		if err := w.Close(); !errors.Is(err, context.Canceled) {
			t.Errorf("Close after cancel: %v, want context.Canceled", err)
		}
		// Polled: the abort runs in the background, and says nothing.
		deadline := time.Now().Add(10 * time.Second)
		for len(listUploads()) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("upload still pending 10s after its context was cancelled")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := st.Stat(ctx, prefix+"cancelled"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("cancelled object visible: %v", err)
		}

		// An upload nobody finishes (a killed writer) is listed, with its
		// start time, and AbortUpload removes it; a second abort is
		// "not found", and an upload elsewhere is not listed.
		c := tg.client(t)
		var ids []string
		for _, k := range []string{prefix + "orphan-a", prefix + "orphan-b", "elsewhere-" + strings.TrimSuffix(prefix, "/")} {
			out, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &tg.bucket, Key: aws.String(k)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, aws.ToString(out.UploadId))
		}
		defer c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &tg.bucket, Key: aws.String("elsewhere-" + strings.TrimSuffix(prefix, "/")), UploadId: &ids[2]})
		ups := listUploads()
		if len(ups) != 2 || ups[0].Key != prefix+"orphan-a" || ups[0].ID != ids[0] || ups[1].Key != prefix+"orphan-b" || ups[1].ID != ids[1] {
			t.Fatalf("uploads: %+v, want orphan-a and orphan-b", ups)
		}
		if age := time.Since(ups[0].Initiated); age < -time.Minute || age > time.Hour {
			t.Errorf("upload initiated %v ago", age)
		}
		for _, u := range ups {
			if err := st.AbortUpload(ctx, u.Key, u.ID); err != nil {
				t.Fatal(err)
			}
		}
		if ups := listUploads(); len(ups) != 0 {
			t.Errorf("uploads after abort: %+v", ups)
		}
		// Again: gone is no failure (MinIO says nothing, S3 "not found").
		if err := st.AbortUpload(ctx, ups[0].Key, ups[0].ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second abort: %v, want nil or not found", err)
		}
		if err := st.Delete(ctx, prefix+"big"); err != nil {
			t.Error(err)
		}
	})
}

func TestUploadsNeedS3(t *testing.T) {
	st, _, err := store.Open(context.Background(), t.TempDir()+"/", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.ListUploads(context.Background(), "", func(store.Upload) error { return nil })
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "only s3://") {
		t.Errorf("ListUploads on a directory: %v", err)
	}
}

// partsCounter counts the part uploads in flight together on their way
// to the embedded server.
type partsCounter struct {
	mu             sync.Mutex
	inFlight, most int
	begun          int           // parts begun since reset
	changed        chan struct{} // closed and replaced when inFlight or begun change
	// release, when set, holds each part until it says, given the parts
	// in flight and begun, that all that can be in flight together are;
	// unset, each part is held a while (the link's latency, which the
	// adaptive tests measure).
	release func(inFlight, begun int) bool
}

// open returns a store whose part uploads go through a proxy that holds
// each, so that parts that can be in flight together are.
func (c *partsCounter) open(t *testing.T) *store.Store {
	tg := embedded(t)
	rp := proxy(t, tg.endpoint)
	c.changed = make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || !r.URL.Query().Has("partNumber") {
			rp.ServeHTTP(w, r)
			return
		}
		c.mu.Lock()
		c.inFlight++
		c.begun++
		c.most = max(c.most, c.inFlight)
		c.notify()
		c.mu.Unlock()
		c.hold()
		rp.ServeHTTP(w, r)
		c.mu.Lock()
		c.inFlight--
		c.notify()
		c.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return s3Target{endpoint: srv.URL, accessKey: tg.accessKey, secretKey: tg.secretKey}.open(t, tg.bucket)
}

// notify wakes the parts held; c.mu held.
func (c *partsCounter) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// hold holds a part as release says, at most await.Within (the test then
// fails on the count).
func (c *partsCounter) hold() {
	c.mu.Lock()
	release := c.release
	c.mu.Unlock()
	if release == nil {
		time.Sleep(200 * time.Millisecond) // the link's latency: the input of the adaptive tests
		return
	}
	timeout := time.After(await.Within)
	for {
		c.mu.Lock()
		done, changed := release(c.inFlight, c.begun), c.changed
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			return
		}
	}
}

func (c *partsCounter) reset(release func(inFlight, begun int) bool) {
	c.mu.Lock()
	c.most, c.begun, c.release = 0, 0, release
	c.mu.Unlock()
}

// peak is the most parts in flight together since reset.
func (c *partsCounter) peak() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.most
}

// TestS3PartsInFlight: a multipart upload keeps WriteOptions.Concurrency
// parts in flight together, and never more.
func TestS3PartsInFlight(t *testing.T) {
	var pc partsCounter
	st := pc.open(t)
	const parts = 6
	data := bytes.Repeat([]byte("parts..."), (26<<20)/8) // six 5 MiB parts, the last short
	for _, conc := range []int{1, 4} {
		// Each part is held until conc are in flight, or the last has
		// begun: more would be in flight by then if the writer allowed it.
		pc.reset(func(inFlight, begun int) bool { return inFlight >= conc || begun == parts })
		key := fmt.Sprintf("inflight-%d", conc)
		if _, err := st.Put(context.Background(), key, bytes.NewReader(data), store.WriteOptions{PartSize: 5 << 20, Concurrency: conc}); err != nil {
			t.Fatal(err)
		}
		got := pc.peak()
		if got != conc {
			t.Errorf("Concurrency %d: at most %d parts in flight together, want %d", conc, got, conc)
		}
		back, err := st.ReadAll(context.Background(), key)
		if err != nil || !bytes.Equal(back, data) {
			t.Errorf("Concurrency %d: read back %d bytes: %v", conc, len(back), err)
		}
	}
}

// TestS3PartsAdapt: with Concurrency zero, parts in flight grow from
// DefaultPartConcurrency while each part takes as long whatever the
// number in flight (so more in flight is faster), never beyond
// MaxPartConcurrency, nor beyond what WriteOptions.Memory holds; every
// request goes through WriteOptions.Send, its length told.
func TestS3PartsAdapt(t *testing.T) {
	var pc partsCounter
	st := pc.open(t)
	const part = 5 << 20
	data := bytes.Repeat([]byte("adapting"), 24*part/8)
	for _, c := range []struct {
		memory   int64
		min, max int
	}{
		{0, store.DefaultPartConcurrency + 1, store.MaxPartConcurrency},
		{3 * part, 2, 2},
	} {
		pc.reset(nil)
		var sends []int64
		var smu sync.Mutex
		opts := store.WriteOptions{PartSize: part, Memory: c.memory, Send: func(ctx context.Context, n int64) (func() error, error) {
			smu.Lock()
			sends = append(sends, n)
			smu.Unlock()
			return func() error { return nil }, nil
		}}
		key := fmt.Sprintf("adapt-%d", c.memory)
		if _, err := st.Put(context.Background(), key, bytes.NewReader(data), opts); err != nil {
			t.Fatal(err)
		}
		got := pc.peak()
		if got < c.min || got > c.max {
			t.Errorf("Memory %d: at most %d parts in flight together, want %d..%d", c.memory, got, c.min, c.max)
		}
		var parts, total int64
		for _, n := range sends {
			if n > 0 {
				parts++
			}
			total += n
		}
		if parts != 24 || total != int64(len(data)) || len(sends) != 26 {
			t.Errorf("Memory %d: Send told of %d requests, %d with %d bytes in all; want 26 (create, 24 parts, complete), %d bytes",
				c.memory, len(sends), parts, total, len(data))
		}
		back, err := st.ReadAll(context.Background(), key)
		if err != nil || !bytes.Equal(back, data) {
			t.Errorf("Memory %d: read back %d bytes: %v", c.memory, len(back), err)
		}
	}
}

// TestS3Retry: with WriteOptions.Retry the caller's policy alone
// retries parts: each try is one request, and a part it gives up on fails
// the upload, which leaves nothing pending.
func TestS3Retry(t *testing.T) {
	var th throttler
	st := th.open(t)
	ctx := context.Background()
	big := bytes.Repeat([]byte("sluice!!"), (11<<20)/8) // three parts

	var tries atomic.Int32
	policy := retry.Policy{Sleep: func(context.Context, time.Duration) error { return nil }}
	opts := store.WriteOptions{PartSize: 5 << 20, Concurrency: 1, Retry: func(ctx context.Context, try func() error) error {
		return policy.Do(ctx, func() error { tries.Add(1); return try() })
	}}
	th.throttle.Store(2)
	if _, err := st.Put(ctx, "retrypart/big", bytes.NewReader(big), opts); err != nil {
		t.Fatalf("two throttled part tries under the caller's policy: %v", err)
	}
	if p, n := th.partPuts.Load(), tries.Load(); p != 5 || n != 7 {
		t.Errorf("%d part requests, %d tries of the policy; want 3 parts + 2 retries, and 7 tries (the create and complete too), one request a try", p, n)
	}
	if got, err := st.ReadAll(ctx, "retrypart/big"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("read back %d bytes: %v", len(got), err)
	}

	// A policy that never retries: the first throttle fails the upload.
	th.partPuts.Store(0)
	th.throttle.Store(1)
	opts.Retry = func(ctx context.Context, try func() error) error { return try() }
	if _, err := st.Put(ctx, "retrypart/failed", bytes.NewReader(big), opts); !store.IsRetryable(err) {
		t.Fatalf("a throttled part without retries: %v, want a retryable error", err)
	}
	if p := th.partPuts.Load(); p != 1 {
		t.Errorf("%d part requests, want 1 (the SDK retried the part)", p)
	}
	if n := pendingUploads(t, th.tg, "retrypart/failed"); n != 0 {
		t.Errorf("%d uploads pending after a failed part", n)
	}
	if _, err := st.Stat(ctx, "retrypart/failed"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("failed object visible: %v", err)
	}

	// Every other request of a write runs under Retry too: the create
	// and the complete of an upload, and a single PUT.
	th.throttle.Store(0)
	opts.Retry = policy.Do
	for _, c := range []struct {
		name      string
		throttled int32 // which POST is answered SlowDown
	}{{"create", 1}, {"complete", 2}} {
		th.posts.Store(0)
		th.throttlePost.Store(c.throttled)
		if _, err := st.Put(ctx, "retrypart/"+c.name, bytes.NewReader(big), opts); err != nil {
			t.Fatalf("a throttled %s under the caller's policy: %v", c.name, err)
		}
		if n := th.posts.Load(); n != 3 {
			t.Errorf("throttled %s: %d POSTs, want 3 (create, complete, one retry)", c.name, n)
		}
		if got, err := st.ReadAll(ctx, "retrypart/"+c.name); err != nil || !bytes.Equal(got, big) {
			t.Fatalf("throttled %s: read back %d bytes: %v", c.name, len(got), err)
		}
	}
	th.throttlePost.Store(0)

	// A complete that took effect, its answer lost: the retry finds no
	// upload, and the object there is this upload's.
	th.posts.Store(0)
	th.losePost.Store(2)
	if _, err := st.Put(ctx, "retrypart/lost-answer", bytes.NewReader(big), opts); err != nil {
		t.Fatalf("a complete whose answer was lost: %v", err)
	}
	th.losePost.Store(0)
	if got, err := st.ReadAll(ctx, "retrypart/lost-answer"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("lost answer: read back %d bytes: %v", len(got), err)
	}
	small := []byte("one request")
	th.puts.Store(0)
	th.throttle.Store(2)
	if _, err := st.Put(ctx, "retrypart/small", bytes.NewReader(small), opts); err != nil {
		t.Fatalf("a single PUT throttled twice under the caller's policy: %v", err)
	}
	if n := th.puts.Load(); n != 3 {
		t.Errorf("%d single PUTs, want 3 (two throttled, one stored)", n)
	}
	if got, err := st.ReadAll(ctx, "retrypart/small"); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("read back %q: %v", got, err)
	}
	th.throttle.Store(1)
	if _, err := st.Put(ctx, "retrypart/small-once", bytes.NewReader(small), store.WriteOptions{}); !store.IsRetryable(err) {
		t.Fatalf("a throttled single PUT without Retry (Attempts 1): %v, want a retryable error", err)
	}
	th.throttle.Store(0)
}

// throttler stands between a store and the embedded server: it answers
// SlowDown to as many PUTs as throttle holds, and counts the part uploads
// and the single PUTs that reach it.
type throttler struct {
	tg                       s3Target
	throttle, partPuts, puts atomic.Int32
	// posts counts the POSTs (a multipart upload's create and complete);
	// the one numbered throttlePost (from 1; 0: none) is answered SlowDown.
	throttlePost, posts atomic.Int32
	// losePost is the POST (from 1; 0: none) that is sent on, and then
	// answered SlowDown: one whose answer was lost.
	losePost atomic.Int32
}

// open returns a store with Attempts 1 (a caller that retries whole
// requests itself) whose requests go through the throttler.
func (th *throttler) open(t *testing.T) *store.Store {
	th.tg = embedded(t)
	rp := proxy(t, th.tg.endpoint)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut {
			if r.URL.Query().Has("partNumber") {
				th.partPuts.Add(1)
			} else {
				th.puts.Add(1)
			}
			if th.throttle.Add(-1) >= 0 {
				slowDown(w, r)
				return
			}
		}
		if r.Method == http.MethodPost {
			n := th.posts.Add(1)
			if n == th.throttlePost.Load() {
				slowDown(w, r)
				return
			}
			if n == th.losePost.Load() {
				// The request takes effect; its answer is lost.
				rp.ServeHTTP(httptest.NewRecorder(), r)
				slowDown(w, r)
				return
			}
			if n == th.losePost.Load()+1 && th.losePost.Load() > 0 {
				// Its retry: S3 has no such upload any more (some servers
				// answer a second complete 200; S3 need not).
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusNotFound)
				w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>`))
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return s3Target{endpoint: srv.URL, accessKey: th.tg.accessKey, secretKey: th.tg.secretKey}.open(t, th.tg.bucket,
		func(o *store.Options) { o.Attempts = 1 })
}

// slowDown answers as S3 does above its request rate: 503 SlowDown,
// after reading the body so the client sees the answer.
func slowDown(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
}
