package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/fanout/kubernetes"
)

// benchCount is what one run of bench --workers measured: the same on
// every executor, as the workers do the same work.
type benchCount struct {
	Workers    int   `json:"workers"`
	PutObjects int   `json:"put_objects"`
	PutBytes   int64 `json:"put_bytes"`
	GetObjects int   `json:"get_objects"`
	GetBytes   int64 `json:"get_bytes"`
	Errors     int   `json:"errors"`
	PerWorker  int   `json:"per_worker"` // figures of each worker's own
	Records    int   `json:"records"`    // in --out, of this run
	Processes  int   `json:"processes"`  // distinct (processes, process) in --out
}

// benchWorkersOn runs bench --workers 1,3 into a fresh directory with
// the executor args choose, and returns what each run measured; the
// directory must hold nothing afterwards.
func benchWorkersOn(t *testing.T, env []string, args ...string) []benchCount {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run.jsonl")
	r := sluice(t, env, append([]string{"bench", "file://" + data + "/", "-q", "--json", "--workers", "1,3", "-n", "3", "--size", "256KiB",
		"-c", "2", "--out", out, "--start-delay", "2s"}, args...)...)
	if r.code != 0 {
		t.Fatalf("bench %q: exit %d: %s", args, r.code, r.stderr)
	}
	var doc struct {
		Runs []struct {
			Workers int `json:"workers"`
			Cell    int `json:"cell"`
			Put     struct {
				Objects int   `json:"objects"`
				Bytes   int64 `json:"bytes"`
				Errors  int   `json:"errors"`
			} `json:"put"`
			Get struct {
				Objects int   `json:"objects"`
				Bytes   int64 `json:"bytes"`
				Errors  int   `json:"errors"`
			} `json:"get"`
			PerWorkerGet []float64 `json:"per_worker_get_mib_s"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := bench.ReadRecords(f, "jsonl")
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var counts []benchCount
	for _, run := range doc.Runs {
		c := benchCount{Workers: run.Workers, PutObjects: run.Put.Objects, PutBytes: run.Put.Bytes, GetObjects: run.Get.Objects,
			GetBytes: run.Get.Bytes, Errors: run.Put.Errors + run.Get.Errors, PerWorker: len(run.PerWorkerGet)}
		procs := map[[2]int]bool{}
		for _, rec := range recs {
			if rec.Cell == run.Cell {
				// Each worker under its own prefix of its run's, found from
				// the index its executor gave it.
				if want := fmt.Sprintf("/r0-k%d/w%03d/sluice-bench-", rec.Processes, rec.Process); !strings.Contains(rec.Key, want) || strings.Count(rec.Key, "/r0-k") != 1 {
					t.Errorf("bench %q: worker %d of %d wrote %s, not under .../%s", args, rec.Process, rec.Processes, rec.Key, want)
				}
				c.Records++
				procs[[2]int{rec.Processes, rec.Process}] = true
			}
		}
		c.Processes = len(procs)
		counts = append(counts, c)
	}
	if left, _ := os.ReadDir(data); len(left) != 0 {
		t.Errorf("bench %q left %v in %s", args, left, data)
	}
	return counts
}

// checkSameCounts: the cluster executor's runs measured what the local
// executor's did, which is what the flags ask for.
func checkSameCounts(t *testing.T, local, got []benchCount) {
	t.Helper()
	want := []benchCount{
		{Workers: 1, PutObjects: 3, PutBytes: 3 << 18, GetObjects: 3, GetBytes: 3 << 18, PerWorker: 1, Records: 6, Processes: 1},
		{Workers: 3, PutObjects: 9, PutBytes: 9 << 18, GetObjects: 9, GetBytes: 9 << 18, PerWorker: 3, Records: 18, Processes: 3},
	}
	for _, c := range []struct {
		name string
		got  []benchCount
	}{{"local", local}, {"cluster", got}} {
		if len(c.got) != len(want) {
			t.Fatalf("%s: runs %+v, want %+v", c.name, c.got, want)
		}
		for i := range want {
			if c.got[i] != want[i] {
				t.Errorf("%s: run %d measured %+v, want %+v", c.name, i, c.got[i], want[i])
			}
		}
	}
}

// TestBenchWorkersSlurm: bench --workers as Slurm array jobs measures
// what the local executor does (objects, bytes, records of every
// worker, read back from the store) and leaves no object and no job.
func TestBenchWorkersSlurm(t *testing.T) {
	needSlurm(t)
	local := benchWorkersOn(t, nil)
	got := benchWorkersOn(t, nil, "--executor", "slurm")
	checkSameCounts(t, local, got)
	if jobs := slurmJobs(t, "sluice-bench-"); len(jobs) != 0 {
		t.Errorf("Slurm jobs left: %q", jobs)
	}
	// The workers did go through sbatch: an argument it refuses fails the
	// run with sbatch's own line.
	r := sluice(t, nil, "bench", "file://"+t.TempDir()+"/", "-q", "--workers", "2", "-n", "1", "--size", "1KiB",
		"--executor", "slurm", "--sbatch=--no-such-sbatch-flag")
	if r.code != exitError || !strings.Contains(r.stderr, "sbatch") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("a refused sbatch argument: exit %d, %q", r.code, r.stderr)
	}
}

// TestBenchWorkersKubernetes: bench --workers as Indexed Jobs on the
// real control plane measures what the local executor does, through pods
// the test kubelet runs, and leaves no Job, pod or object.
func TestBenchWorkersKubernetes(t *testing.T) {
	k := needKube(t)
	local := benchWorkersOn(t, nil)
	// Watch the namespace for the bench's pods while it runs.
	var pods atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]bool{}
		for ctx.Err() == nil {
			l, err := k.cs.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelJob})
			if err == nil {
				for _, p := range l.Items {
					if strings.HasPrefix(p.Labels[kubernetes.LabelJob], "bench-") {
						seen[p.Name] = true
					}
				}
				pods.Store(int32(len(seen)))
			}
			// Sampled: each pod lives the --start-delay below, many rounds.
			time.Sleep(50 * time.Millisecond)
		}
	}()
	got := benchWorkersOn(t, k.env(), append(k.args(), "--start-delay", "5s")...)
	cancel()
	<-done
	checkSameCounts(t, local, got)
	if n := pods.Load(); n != 4 {
		t.Errorf("saw %d pods of the bench's Jobs, want 4 (1 + 3 workers)", n)
	}
	if left := k.left(t); len(left) != 0 {
		t.Errorf("left in namespace %s: %q", k.ns, left)
	}
}
