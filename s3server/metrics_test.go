package s3server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-data/sluice/internal/metricstest"
	"github.com/sluice-data/sluice/s3server"
)

// exchange is what the client saw of one request: the status and the
// body bytes each way, as they went over the wire.
type exchange struct {
	code      int
	sent, got int64
}

type exchangeKey struct{}

// recordingTransport fills in the exchange a request's context carries.
type recordingTransport struct{ http.RoundTripper }

type countingReader struct {
	io.ReadCloser
	n *int64
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	*r.n += int64(n)
	return n, err
}

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex == nil {
		return nil, errors.New("request without an exchange")
	}
	if req.Body != nil && req.Body != http.NoBody {
		req = req.Clone(req.Context())
		req.Body = countingReader{req.Body, &ex.sent}
	}
	resp, err := t.RoundTripper.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	// The whole body, whatever the SDK reads of an error's.
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	ex.code, ex.got = resp.StatusCode, int64(len(b))
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// TestMetrics sends many concurrent requests of several operations, some
// of them failing, and checks that the scraped metrics count exactly
// what the client saw: requests by operation and status code, latency
// observations, body bytes each way, and nothing left in flight.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	srv, err := s3server.Start(t.Context(), t.TempDir(), "", s3server.Options{Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	// The same registry cannot take a second server's collectors.
	if _, err := s3server.Start(t.Context(), t.TempDir(), "", s3server.Options{Metrics: reg}); err == nil {
		t.Error("a second server on the same registry started")
	}
	metricsURL := metricstest.Serve(t, reg)

	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: recordingTransport{tr}}
	client := func(secret string) *s3.Client {
		return s3.New(s3.Options{
			Region:       srv.Region,
			BaseEndpoint: aws.String(srv.Endpoint),
			UsePathStyle: true,
			Credentials:  credentials.NewStaticCredentialsProvider(srv.AccessKey, secret, ""),
			HTTPClient:   hc,
			// One request per call, whatever its answer.
			Retryer: aws.NopRetryer{},
			DisableLogOutputChecksumValidationSkipped: true,
		})
	}
	good, badSig := client(srv.SecretKey), client("not-the-secret")

	type want struct {
		op   string
		code int
	}
	var (
		mu        sync.Mutex
		requests  = map[want]int{}
		sent, got = map[string]int64{}, map[string]int64{} // by operation, as the server sees it
	)
	// do runs one call and records what went over the wire; the status
	// must be the expected one.
	do := func(op string, code int, call func(ctx context.Context) error) error {
		ex := &exchange{}
		ctx := context.WithValue(context.Background(), exchangeKey{}, ex)
		err := call(ctx)
		if ex.code != code {
			return fmt.Errorf("%s: status %d (error %v), want %d", op, ex.code, err, code)
		}
		if (err == nil) != (code < 300) {
			return fmt.Errorf("%s: status %d and error %v", op, ex.code, err)
		}
		mu.Lock()
		defer mu.Unlock()
		requests[want{op, code}]++
		got[op] += ex.sent
		sent[op] += ex.got
		return nil
	}

	seed := bytes.Repeat([]byte("0123456789abcdef"), 256) // 4 KiB
	if err := do("PutObject", 200, func(ctx context.Context) error {
		_, err := good.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("seed"), Body: bytes.NewReader(seed)})
		return err
	}); err != nil {
		t.Fatal(err)
	}

	kinds := []struct {
		op   string
		code int
		call func(ctx context.Context, g, i int) error
	}{
		{"PutObject", 200, func(ctx context.Context, g, i int) error {
			body := bytes.Repeat([]byte{byte(i)}, 1000+g*50+i) // sizes differ
			_, err := good.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(fmt.Sprintf("put/%d/%d", g, i)), Body: bytes.NewReader(body)})
			return err
		}},
		{"GetObject", 200, func(ctx context.Context, g, i int) error {
			out, err := good.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("seed")})
			if err != nil {
				return err
			}
			defer out.Body.Close()
			b, err := io.ReadAll(out.Body)
			if err == nil && !bytes.Equal(b, seed) {
				err = errors.New("wrong body")
			}
			return err
		}},
		{"GetObject", 206, func(ctx context.Context, g, i int) error {
			out, err := good.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("seed"), Range: aws.String("bytes=100-1099")})
			if err != nil {
				return err
			}
			defer out.Body.Close()
			_, err = io.Copy(io.Discard, out.Body)
			return err
		}},
		{"HeadObject", 200, func(ctx context.Context, g, i int) error {
			_, err := good.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("seed")})
			return err
		}},
		{"GetObject", 404, func(ctx context.Context, g, i int) error {
			_, err := good.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(fmt.Sprintf("missing/%d", i))})
			return err
		}},
		{"ListObjects", 200, func(ctx context.Context, g, i int) error {
			_, err := good.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: aws.String("seed")})
			return err
		}},
		{"GetObject", 403, func(ctx context.Context, g, i int) error { // a bad signature
			_, err := badSig.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("seed")})
			return err
		}},
		{"HeadObject", 403, func(ctx context.Context, g, i int) error { // not signed at all
			req, err := http.NewRequestWithContext(ctx, http.MethodHead, srv.Endpoint+"/bkt/seed", nil)
			if err != nil {
				return err
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			return fmt.Errorf("%s", resp.Status)
		}},
		{"Other", 501, func(ctx context.Context, g, i int) error { // not implemented
			_, err := good.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: aws.String("bkt"), Key: aws.String("seed")})
			return err
		}},
		{"CopyObject", 200, func(ctx context.Context, g, i int) error {
			_, err := good.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String(fmt.Sprintf("copy/%d/%d", g, i)), CopySource: aws.String("bkt/seed")})
			return err
		}},
		{"DeleteObject", 204, func(ctx context.Context, g, i int) error {
			_, err := good.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String(fmt.Sprintf("put/%d/%d", g, i-i%11))})
			return err
		}},
	}
	const goroutines, perGoroutine = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				k := kinds[(g+i)%len(kinds)]
				if err := do(k.op, k.code, func(ctx context.Context) error { return k.call(ctx, g, i) }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	total := 0
	for _, n := range requests {
		total += n
	}
	if total != 1+goroutines*perGoroutine {
		t.Fatalf("%d requests recorded, sent %d", total, 1+goroutines*perGoroutine)
	}

	m := metricstest.Settled(t, metricsURL, "sluice_s3_requests_in_flight", "sluice_s3_requests_total", total)
	perOp := map[string]int{}
	for w, n := range requests {
		perOp[w.op] += n
		if v := m.Get(t, "sluice_s3_requests_total", "operation", w.op, "code", strconv.Itoa(w.code)); v != float64(n) {
			t.Errorf("requests %s %d: %v, sent %d", w.op, w.code, v, n)
		}
	}
	if n := len(m.Series("sluice_s3_requests_total")); n != len(requests) {
		t.Errorf("%d series of requests, want %d: %v", n, len(requests), m.Series("sluice_s3_requests_total"))
	}
	for op, n := range perOp {
		if v := m.Get(t, "sluice_s3_request_duration_seconds_count", "operation", op); v != float64(n) {
			t.Errorf("latency observations of %s: %v, want %d", op, v, n)
		}
		if v := m.Get(t, "sluice_s3_request_duration_seconds_bucket", "operation", op, "le", "+Inf"); v != float64(n) {
			t.Errorf("latency +Inf bucket of %s: %v, want %d", op, v, n)
		}
		if v := m.Get(t, "sluice_s3_received_bytes_total", "operation", op); v != float64(got[op]) {
			t.Errorf("bytes received by %s: %v, the client sent %d", op, v, got[op])
		}
		if v := m.Get(t, "sluice_s3_sent_bytes_total", "operation", op); v != float64(sent[op]) {
			t.Errorf("bytes sent by %s: %v, the client got %d", op, v, sent[op])
		}
	}
	// What is known without the client's count: the puts' bodies, the
	// objects whole and in part, nothing for HEAD.
	putBytes := int64(len(seed))
	nGet, nRange := 0, 0
	for g := range goroutines {
		for i := range perGoroutine {
			switch k := kinds[(g+i)%len(kinds)]; {
			case k.op == "PutObject":
				putBytes += int64(1000 + g*50 + i)
			case k.op == "GetObject" && k.code == 200:
				nGet++
			case k.op == "GetObject" && k.code == 206:
				nRange++
			}
		}
	}
	if got["PutObject"] != putBytes || sent["HeadObject"] != 0 {
		t.Errorf("the client sent %d bytes of puts (want %d) and got %d of HEADs", got["PutObject"], putBytes, sent["HeadObject"])
	}
	// A GET's errors have bodies too: the objects' bytes are a lower bound.
	if v := m.Get(t, "sluice_s3_sent_bytes_total", "operation", "GetObject"); v < float64(nGet*len(seed)+nRange*1000) {
		t.Errorf("GetObject sent %v bytes, less than the %d of the objects", v, nGet*len(seed)+nRange*1000)
	}
	// Operations never asked for are there, at zero.
	if v := m.Get(t, "sluice_s3_request_duration_seconds_count", "operation", "CompleteMultipartUpload"); v != 0 {
		t.Errorf("CompleteMultipartUpload observed %v times", v)
	}
	t.Logf("%d requests, %d operation/status pairs; GetObject sent %v bytes", total, len(requests),
		m.Get(t, "sluice_s3_sent_bytes_total", "operation", "GetObject"))
}
