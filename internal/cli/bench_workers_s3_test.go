package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sluice-data/sluice/internal/s3test"
	"github.com/sluice-data/sluice/s3server"
)

// TestBenchWorkersS3 runs `bench --workers` against the embedded S3
// endpoint and, from ./scripts/test, MinIO: every worker process writes
// and reads through S3, and nothing is left under the prefix.
func TestBenchWorkersS3(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		srv, err := s3server.Start(context.Background(), t.TempDir(), "127.0.0.1:0", s3server.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		if err := srv.CreateBucket("bkt"); err != nil {
			t.Fatal(err)
		}
		benchWorkersS3(t, append(srv.Env(), "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"), "bkt")
	})
	t.Run("minio", func(t *testing.T) {
		endpoint, bucket := s3test.Bucket(t)
		benchWorkersS3(t, []string{"AWS_ENDPOINT_URL=" + endpoint}, bucket)
	})
}

func benchWorkersS3(t *testing.T, env []string, bucket string) {
	prefix := "s3://" + bucket + "/bench-workers-test/"
	r := sluice(t, env, "bench", prefix, "-q", "--json", "--workers", "1,3", "-n", "4", "--size", "1MiB", "-c", "2",
		"--sim", "ttfb=1ms,link=64MiB/s")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Runs []struct {
			Workers int `json:"workers"`
			Put     struct {
				Objects int `json:"objects"`
			} `json:"put"`
			Get struct {
				Objects int   `json:"objects"`
				Bytes   int64 `json:"bytes"`
			} `json:"get"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if len(doc.Runs) != 2 {
		t.Fatalf("runs %+v", doc.Runs)
	}
	for _, run := range doc.Runs {
		n := 4 * run.Workers
		if run.Put.Objects != n || run.Get.Objects != n || run.Get.Bytes != int64(n)<<20 {
			t.Errorf("%d workers: %+v, want %d objects each way", run.Workers, run, n)
		}
	}
	// Nothing left: ls finds no object under the prefix.
	r = sluice(t, env, "ls", "--recursive", prefix)
	if r.code != exitNotFound {
		t.Errorf("after the run: exit %d, %s%s", r.code, r.stdout, r.stderr)
	}
}
