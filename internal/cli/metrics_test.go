package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-data/sluice/flightsvc"
	"github.com/sluice-data/sluice/internal/metricstest"
)

var metricsURL = regexp.MustCompile(`Prometheus metrics at (http://\S+/metrics)`)

// startDaemon runs sluice with args until the test ends (interrupted
// then, it must exit 0) and returns what it printed on stdout up to
// "press Ctrl-C to stop".
func startDaemon(t *testing.T, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%s exited %d on interrupt, want 0 (stderr %q)", args[0], code, stderr.String())
		}
	})
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if sc.Text() == "press Ctrl-C to stop" {
			go io.Copy(io.Discard, stdout)
			return lines
		}
		lines = append(lines, sc.Text())
	}
	t.Fatalf("%s stopped before serving: %q (stderr %q)", args[0], lines, stderr.String())
	return nil
}

// TestServerMetrics runs `sluice serve-s3 --metrics-addr`, sends 8 x 50
// concurrent requests (puts, gets, gets of missing keys, badly signed
// gets) and checks the scraped counters against them: requests by
// operation and status, latency observations, the puts' body bytes,
// nothing in flight, and the Go and process collectors beside them.
func TestServerMetrics(t *testing.T) {
	var endpoint, ak, sk, url string
	for _, l := range startDaemon(t, "serve-s3", "--dir", t.TempDir(), "--addr", "127.0.0.1:0", "--bucket", "bkt", "--metrics-addr", "127.0.0.1:0") {
		l = strings.TrimSpace(l)
		if m := metricsURL.FindStringSubmatch(l); m != nil {
			url = m[1]
		}
		if v, ok := strings.CutPrefix(l, "export AWS_ENDPOINT_URL="); ok {
			endpoint = v
		}
		if v, ok := strings.CutPrefix(l, "export AWS_ACCESS_KEY_ID="); ok {
			ak = v
		}
		if v, ok := strings.CutPrefix(l, "export AWS_SECRET_ACCESS_KEY="); ok {
			sk = v
		}
	}
	if url == "" || ak == "" || !strings.HasPrefix(endpoint, "http://") {
		t.Fatalf("no metrics URL %q, endpoint %q or keys", url, endpoint)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	defer tr.CloseIdleConnections()
	client := func(secret string) *s3.Client {
		return s3.New(s3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(ak, secret, ""),
			HTTPClient:  &http.Client{Transport: tr}, Retryer: aws.NopRetryer{},
			DisableLogOutputChecksumValidationSkipped: true,
		})
	}
	good, bad := client(sk), client("wrong")
	statusOf := func(err error) int {
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			return re.HTTPStatusCode()
		}
		if err == nil {
			return 200
		}
		return -1
	}
	body := func(g, i int) []byte { return bytes.Repeat([]byte{'x'}, 100+g*50+i) }
	ctx := context.Background()
	calls := []func(g, i int) (string, error){
		func(g, i int) (string, error) {
			_, err := good.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(fmt.Sprintf("k/%d/%d", g, i)), Body: bytes.NewReader(body(g, i))})
			return "PutObject", err
		},
		func(g, i int) (string, error) {
			out, err := good.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String(fmt.Sprintf("k/%d/%d", g, i-1))})
			if err == nil {
				_, err = io.Copy(io.Discard, out.Body)
				out.Body.Close()
			}
			return "GetObject", err
		},
		func(g, i int) (string, error) {
			_, err := good.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("missing")})
			return "GetObject", err
		},
		func(g, i int) (string, error) {
			_, err := bad.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("missing")})
			return "GetObject", err
		},
	}
	wantCode := []int{200, 200, 404, 403}
	type key struct {
		op   string
		code int
	}
	var mu sync.Mutex
	sent := map[key]int{}
	var putBytes int
	const goroutines, perGoroutine = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				op, err := calls[i%len(calls)](g, i)
				code := statusOf(err)
				if code != wantCode[i%len(calls)] {
					errs <- fmt.Errorf("%s: status %d (%v), want %d", op, code, err, wantCode[i%len(calls)])
					return
				}
				mu.Lock()
				sent[key{op, code}]++
				if op == "PutObject" {
					putBytes += len(body(g, i))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m := metricstest.Settled(t, url, "sluice_s3_requests_in_flight", "sluice_s3_requests_total", goroutines*perGoroutine)
	perOp := map[string]int{}
	for k, n := range sent {
		perOp[k.op] += n
		if v := m.Get(t, "sluice_s3_requests_total", "operation", k.op, "code", strconv.Itoa(k.code)); v != float64(n) {
			t.Errorf("%s %d: %v counted, %d sent", k.op, k.code, v, n)
		}
	}
	for op, n := range perOp {
		if v := m.Get(t, "sluice_s3_request_duration_seconds_count", "operation", op); v != float64(n) {
			t.Errorf("%s: %v latencies observed, %d sent", op, v, n)
		}
	}
	if v := m.Get(t, "sluice_s3_received_bytes_total", "operation", "PutObject"); v != float64(putBytes) {
		t.Errorf("PutObject: %v bytes received, %d sent", v, putBytes)
	}
	if len(m.Series("go_goroutines")) != 1 || len(m.Series("process_cpu_seconds_total")) != 1 {
		t.Error("no Go or process metrics")
	}
}

// TestServeMetrics runs `sluice serve-flight --metrics-addr` and makes
// 8 x 20 concurrent calls (plans, streams, plans of a missing dataset):
// the scraped calls by method and code, and the rows sent, are those
// the client made and got.
func TestServeMetrics(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "8000", "--files", "2", "--row-group-rows", "1000", "--out", filepath.Join(data, "taxi"), "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	var addr, url string
	for _, l := range startDaemon(t, "serve-flight", data, "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--piece-size", "1KiB") {
		if m := metricsURL.FindStringSubmatch(l); m != nil {
			url = m[1]
		}
		if a := regexp.MustCompile(`grpc://[0-9.]+:[0-9]+`).FindString(l); a != "" {
			addr = a
		}
	}
	if url == "" || addr == "" {
		t.Fatalf("no metrics URL %q or address %q", url, addr)
	}
	client, err := flightsvc.Dial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	taxi := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"dataset":"taxi/"}`)}
	info, err := client.GetFlightInfo(ctx, taxi)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		method string
		code   codes.Code
	}
	var mu sync.Mutex
	made := map[key]int{{"GetFlightInfo", codes.OK}: 1}
	var rows int64
	calls := []func(g, i int) (string, error){
		func(g, i int) (string, error) {
			_, err := client.GetFlightInfo(ctx, taxi)
			return "GetFlightInfo", err
		},
		func(g, i int) (string, error) {
			s, err := client.DoGet(ctx, info.Endpoint[(g+i)%len(info.Endpoint)].Ticket)
			if err != nil {
				return "DoGet", err
			}
			r, err := flight.NewRecordReader(s)
			if err != nil {
				return "DoGet", err
			}
			defer r.Release()
			var n int64
			for r.Next() {
				n += r.RecordBatch().NumRows()
			}
			mu.Lock()
			rows += n
			mu.Unlock()
			return "DoGet", r.Err()
		},
		func(g, i int) (string, error) {
			_, err := client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"dataset":"nope/"}`)})
			return "GetFlightInfo", err
		},
	}
	wantCode := []codes.Code{codes.OK, codes.OK, codes.NotFound}
	const goroutines, perGoroutine = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				method, err := calls[i%len(calls)](g, i)
				if code := status.Code(err); code != wantCode[i%len(calls)] {
					errs <- fmt.Errorf("%s: %v, want %v", method, err, wantCode[i%len(calls)])
					return
				}
				mu.Lock()
				made[key{method, status.Code(err)}]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m := metricstest.Settled(t, url, "sluice_flight_calls_in_flight", "sluice_flight_calls_total", 1+goroutines*perGoroutine)
	for k, n := range made {
		if v := m.Get(t, "sluice_flight_calls_total", "method", k.method, "code", k.code.String()); v != float64(n) {
			t.Errorf("%s %v: %v counted, %d made", k.method, k.code, v, n)
		}
	}
	if v := m.Get(t, "sluice_flight_call_duration_seconds_count", "method", "DoGet"); v != float64(made[key{"DoGet", codes.OK}]) {
		t.Errorf("DoGet: %v latencies observed, %d made", v, made[key{"DoGet", codes.OK}])
	}
	if v := m.Get(t, "sluice_flight_sent_rows_total"); v != float64(rows) || rows == 0 {
		t.Errorf("%v rows sent, the client got %d", v, rows)
	}
}

// TestRunMetrics: `sluice run --workers --metrics-addr` serves the job's
// metrics while it runs (a job, its map phase's tasks), says where on
// stderr, and stops with the job.
func TestRunMetrics(t *testing.T) {
	data := filepath.Join(t.TempDir(), "taxi")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "4000", "--files", "2", "--row-group-rows", "1000", "--out", data, "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	cmd := exec.Command(sluiceBin, "run", "--workers", "2", "--metrics-addr", "127.0.0.1:0", "--x-pause-before-commit", "1s",
		"scan "+data+" --columns payment_type | count-by payment_type | to-csv")
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	url := ""
	var lines []string
	for url == "" && sc.Scan() {
		lines = append(lines, sc.Text())
		if m := metricsURL.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	go io.Copy(io.Discard, stderr)
	if url == "" {
		cmd.Wait()
		t.Fatalf("no metrics URL on stderr: %q", lines)
	}
	// The workers wait a second before committing: the map phase runs.
	var running, tasks float64
	// Polled, as Prometheus scrapes.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && tasks == 0; time.Sleep(20 * time.Millisecond) {
		m := metricstest.Scrape(t, url, nil)
		running = m.Get(t, "sluice_fanout_jobs_running")
		tasks = m.Sum("sluice_fanout_phase_tasks", "phase", "map")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if running != 1 || tasks == 0 {
		t.Errorf("while running: %v jobs running, %v map tasks; want 1 and some", running, tasks)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("metrics still served after the run")
	}
}

// TestMetricsAddrRefused: addresses other than loopback are refused where
// the command's own listener rules would refuse them.
func TestMetricsAddrRefused(t *testing.T) {
	dir := t.TempDir()
	assertBadInputs(t, nil, dir, []badInput{
		{"serve without a token", []string{"serve-flight", dir, "--metrics-addr", "0.0.0.0:0"}, exitUsage, "give --token"},
		{"run", []string{"run", "--workers", "2", "--metrics-addr", "0.0.0.0:0", "scan " + dir}, exitUsage, "loopback only"},
		{"run in one process", []string{"run", "--metrics-addr", "127.0.0.1:0", "scan " + dir}, exitUsage, "give --workers"},
		{"bad address", []string{"serve-s3", "--dir", dir, "--metrics-addr", "nope"}, exitUsage, "bad --metrics-addr"},
	})
}
