package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/internal/await"
)

func TestBenchBadInput(t *testing.T) {
	dir := t.TempDir()
	url := "file://" + dir + "/"
	for _, c := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"--size", "0"}, exitUsage, "object size must be positive"},
		{[]string{"--size", "-1MiB"}, exitUsage, "must not be negative"},
		{[]string{"--size", "16M"}, exitUsage, "bad size"},
		{[]string{"--concurrency", "0"}, exitUsage, "--concurrency"},
		{[]string{"--range-size", "0"}, exitUsage, "--range-size"},
		{[]string{"--parts", "-1"}, exitUsage, "--parts"},
		{[]string{"--objects", "-2"}, exitUsage, "objects must not be negative"},
		{[]string{"--read-only", "--write-only"}, exitUsage, "exclude each other"},
		{[]string{"--out", filepath.Join(dir, "r.txt")}, exitUsage, ".jsonl"},
		{[]string{"--read-only"}, exitNotFound, "no objects to read"},
	} {
		r := sluice(t, nil, append([]string{"bench", url, "-q"}, c.args...)...)
		assertCleanFailure(t, r, c.code, c.mention)
	}
	// An unwritable place: the first put fails and the run stops there.
	r := sluice(t, nil, "bench", "file:///proc/sluice-bench-test/", "-q", "-n", "2", "--size", "1KiB")
	if r.code == 0 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("unwritable URL: exit %d, stderr %q", r.code, r.stderr)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("bad input left %d entries behind", len(left))
	}
}

// benchData makes a directory in dir for bench to write in, holding a
// file of someone else's; when the test ends it must hold only that file.
func benchData(t *testing.T, dir string) string {
	t.Helper()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "theirs"), []byte("not ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if left, _ := os.ReadDir(data); len(left) != 1 || left[0].Name() != "theirs" {
			t.Errorf("after the run %s holds %v; want only what was there", data, left)
		}
	})
	return data
}

func TestBenchEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data := benchData(t, dir)
	out, plot := filepath.Join(dir, "reqs.csv"), filepath.Join(dir, "bench.png")
	r := sluice(t, nil, "bench", "file://"+data+"/", "-q", "--json", "-n", "6", "--size", "256KiB,1MiB", "-c", "1,3",
		"--range-size", "100KiB", "--out", out, "--plot", plot, "--sim", "ttfb=1ms,stream=200MiB/s")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		URL    string `json:"url"`
		Sim    string `json:"sim"`
		Phases []struct {
			Kind        string  `json:"kind"`
			Objects     int     `json:"objects"`
			Concurrency int     `json:"concurrency"`
			RangeSize   int64   `json:"range_size"`
			SteadyMiBps float64 `json:"steady_mib_s"`
			WholeMiBps  float64 `json:"whole_mib_s"`
			FirstByteMs struct {
				P50 float64 `json:"p50"`
			} `json:"first_byte_ms"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("--json output: %v\n%s", err, r.stdout)
	}
	if len(doc.Phases) != 8 || !strings.Contains(doc.URL, "/sluice-bench-") || doc.Sim != "ttfb=1ms,stream=200MiB/s" {
		t.Fatalf("json: %+v", doc)
	}
	for _, p := range doc.Phases {
		if p.Objects != 6 || p.SteadyMiBps <= 0 || p.WholeMiBps <= 0 || p.FirstByteMs.P50 < 1 {
			t.Errorf("phase %+v", p)
		}
		if (p.Kind == "get") != (p.RangeSize == 100<<10) {
			t.Errorf("phase %s has range size %d", p.Kind, p.RangeSize)
		}
	}
	csv, err := os.ReadFile(out)
	if err != nil || !strings.HasPrefix(string(csv), "kind,cell,concurrency,worker,") {
		t.Fatalf("--out: %v %.80q", err, csv)
	}
	f, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("--plot: %v", err)
	}
}

func TestBenchKeepThenReadOnly(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, nil, "bench", dir, "-q", "--write-only", "--keep", "-n", "3", "--size", "512KiB", "-c", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "kept the objects under file://") {
		t.Fatalf("exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	kept := strings.TrimSpace(r.stdout[strings.LastIndex(r.stdout, "under ")+len("under "):])
	r = sluice(t, nil, "bench", kept, "--read-only", "-c", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "get: 3 objects of 512KiB, concurrency 2") {
		t.Fatalf("read-only: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// Not a terminal: each phase ends with a plain line on stderr.
	if !strings.Contains(r.stderr, "MiB/s steady") {
		t.Errorf("no plain progress line: %q", r.stderr)
	}
	if objs, _ := filepath.Glob(filepath.Join(dir, "sluice-bench-*", "obj-*")); len(objs) != 3 {
		t.Errorf("read-only changed the kept objects: %v", objs)
	}
}

func TestBenchWorkersAndPredict(t *testing.T) {
	dir := t.TempDir()
	data := benchData(t, dir)
	out, plot := filepath.Join(dir, "run.jsonl"), filepath.Join(dir, "timeline.png")
	r := sluice(t, nil, "bench", "file://"+data+"/", "-q", "--json", "--workers", "1,2", "-n", "3", "--size", "256KiB", "-c", "2",
		"--out", out, "--plot", plot, "--sim", "ttfb=1ms,link=32MiB/s")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Sim  string `json:"sim"`
		Runs []struct {
			Workers      int       `json:"workers"`
			PerWorkerGet []float64 `json:"per_worker_get_mib_s"`
			Get          struct {
				Objects     int     `json:"objects"`
				SteadyMiBps float64 `json:"steady_mib_s"`
			} `json:"get"`
		} `json:"runs"`
		Scaling []struct {
			Workers  int     `json:"workers"`
			GetRatio float64 `json:"get_ratio"`
			Ideal    float64 `json:"ideal"`
		} `json:"scaling"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.stdout)
	}
	if len(doc.Runs) != 2 || len(doc.Scaling) != 2 || doc.Sim != "ttfb=1ms,link=32MiB/s" {
		t.Fatalf("json: %+v", doc)
	}
	for i, run := range doc.Runs {
		if run.Workers != i+1 || run.Get.Objects != 3*(i+1) || len(run.PerWorkerGet) != i+1 || run.Get.SteadyMiBps <= 0 {
			t.Errorf("run %+v", run)
		}
	}
	if doc.Scaling[1].Workers != 2 || doc.Scaling[1].Ideal != 2 || doc.Scaling[1].GetRatio <= 0 {
		t.Errorf("scaling %+v", doc.Scaling)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := bench.ReadRecords(f, "jsonl")
	f.Close()
	if err != nil || len(recs) != 18 {
		t.Fatalf("--out: %d records, %v; want 3 puts and 3 gets from each of 3 workers", len(recs), err)
	}
	procs := map[[2]int]bool{}
	for _, rec := range recs {
		procs[[2]int{rec.Processes, rec.Process}] = true
	}
	if len(procs) != 3 {
		t.Errorf("records of %d (processes, process) pairs, want 3: %v", len(procs), procs)
	}
	img, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer img.Close()
	if _, err := png.Decode(img); err != nil {
		t.Fatalf("--plot: %v", err)
	}

	r = sluice(t, nil, "bench", "--predict", "100,1000", "--from", out, "--prefixes", "4", "--sim", "reqlimit=100:200")
	if r.code != 0 {
		t.Fatalf("predict: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"measured put: 1 run(s) of 2 worker process(es)", "measured get:", "at most 100 writes/s and 200 reads/s", "over 4 prefix(es)", "prefixes needed"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("predict output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "  put  ") + strings.Count(r.stdout, "  get  "); n != 4 {
		t.Errorf("%d prediction rows, want 4:\n%s", n, r.stdout)
	}
}

func TestBenchWorkersBadInput(t *testing.T) {
	dir := t.TempDir()
	url := "file://" + dir + "/"
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"kind":"put","start":3,"last_byte":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"bench", url, "--workers", "0"}, exitUsage, "workers must be in 1.."},
		{[]string{"bench", url, "--workers", "two"}, exitUsage, "--workers"},
		{[]string{"bench", url, "--workers", "2", "-c", "1,2"}, exitUsage, "one --concurrency"},
		{[]string{"bench", url, "--workers", "2", "--read-only"}, exitUsage, "--read-only does not apply"},
		{[]string{"bench", url, "--workers", "2", "--runs", "0"}, exitUsage, "--runs"},
		{[]string{"bench", url, "--prefixes", "-1"}, exitUsage, "prefixes must be in"},
		{[]string{"bench", "--predict", "1000"}, exitUsage, "needs --from"},
		{[]string{"bench", "--predict", "x", "--from", bad}, exitUsage, "--predict"},
		{[]string{"bench", url, "--predict", "1000", "--from", bad}, exitUsage, "argument"},
		{[]string{"bench", "--predict", "1000", "--from", filepath.Join(dir, "r.txt")}, exitUsage, ".jsonl"},
		{[]string{"bench", "--predict", "1000", "--from", bad}, exitError, "records line 1: last_byte 1s is before start 3s"},
		{[]string{"bench", "--predict", "1000", "--from", filepath.Join(dir, "none.jsonl")}, exitError, "none.jsonl"},
	} {
		assertCleanFailure(t, sluice(t, nil, append(c.args, "-q")...), c.code, c.mention)
	}
	// A worker that cannot write: the run stops with its error, naming it.
	r := sluice(t, nil, "bench", "file:///proc/sluice-bench-test/", "--workers", "2", "-q", "-n", "2", "--size", "1KiB")
	assertCleanFailure(t, r, exitError, "worker ")
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("bad input left %d entries behind", len(left))
	}
}

// Ctrl-C at the driver stops every worker, and nothing is left.
func TestBenchWorkersInterrupted(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, "bench", dir, "--workers", "3", "-q", "-n", "64", "--size", "1MiB", "-c", "2",
		"--sim", "link=4MiB/s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the workers have written something, then interrupt the
	// driver alone: it must stop the workers itself.
	await.Until(t, "the workers to write objects", func() bool {
		objs, _ := filepath.Glob(filepath.Join(dir, "sluice-bench-*", "*", "w*", "sluice-bench-*", "obj-*"))
		return len(objs) >= 3
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupt {
		t.Errorf("exit %v, want %d; stderr %q", err, exitInterrupt, stderr.String())
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("after Ctrl-C %s holds %v", dir, left)
	}
}

// TestBenchInterruptedPrintsWhatItMeasured: Ctrl-C after two phases ends
// prints their figures, then exits 130.
func TestBenchInterruptedPrintsWhatItMeasured(t *testing.T) {
	cmd := exec.Command(sluiceBin, "bench", t.TempDir(), "--size", "256KiB", "--objects", "16", "--concurrency", "16,1",
		"--sim", "ttfb=1ms,stream=2MiB/s")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// The c=16 phases take about 0.15 s each, the c=1 ones 2 s: after
		// the second phase's line the third is well under way.
		sc := bufio.NewScanner(stderr)
		ended := 0
		for ended < 2 && sc.Scan() {
			if strings.Contains(sc.Text(), " steady, ") {
				ended++
			}
		}
		if ended < 2 {
			done <- fmt.Errorf("bench ended before two phases did")
			return
		}
		done <- cmd.Process.Signal(os.Interrupt)
		io.Copy(io.Discard, stderr)
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("no two phases in 60 s")
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupt {
		t.Errorf("exit %d, want %d", code, exitInterrupt)
	}
	out := stdout.String()
	if !strings.Contains(out, "interrupted: the phases measured so far") {
		t.Errorf("stdout lacks the interruption:\n%s", out)
	}
	// Both phases' rows: op, size, concurrency and objects, however wide.
	for _, op := range []string{"put", "get"} {
		if !regexp.MustCompile(`(?m)^\s*` + op + `\s+256KiB\s+16\s+16\s`).MatchString(out) {
			t.Errorf("stdout lacks the %s row:\n%s", op, out)
		}
	}
}
