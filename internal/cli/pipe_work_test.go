package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestPipedStageWorksInItsOwnProcess: in `nice -n 19 sluice scan DIR -o -
// | sluice sum-by ...` the scan's work is done by the niced writer, not
// moved into the reader, so a user's per-process controls (nice, taskset,
// cgroups, ulimit, a profiler) cover the work they were put on. The
// writer's CPU time is measured from its rusage: it must exceed the
// reader's and twice a bare process start's, and the result must equal
// the one-process run's.
func TestPipedStageWorksInItsOwnProcess(t *testing.T) {
	if _, err := exec.LookPath("nice"); err != nil {
		t.Fatalf("nice: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "lineitem")
	if r := sluice(t, nil, "gen", "lineitem", "--rows", "500000", "--files", "2", "--out", dir, "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	fused := sluice(t, nil, "run", "scan "+dir+" | sum-by l_returnflag l_quantity | to-csv")
	if fused.code != 0 {
		t.Fatalf("run: %+v", fused)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(cmd *exec.Cmd) {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	cpu := func(cmd *exec.Cmd) time.Duration {
		return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	version := exec.CommandContext(ctx, sluiceBin, "--version")
	if err := version.Run(); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// One standard error for all, as a shell gives its pipeline.
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	var out bytes.Buffer
	writer := exec.CommandContext(ctx, "nice", "-n", "19", sluiceBin, "scan", dir, "-o", "-")
	writer.Stdout, writer.Stderr = w, stderr
	reader := exec.CommandContext(ctx, sluiceBin, "sum-by", "l_returnflag", "l_quantity")
	reader.Stdin, reader.Stderr = r, stderr
	csv := exec.CommandContext(ctx, sluiceBin, "to-csv")
	csv.Stderr = stderr
	csvIn, err := reader.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	csv.Stdin, csv.Stdout = csvIn, &out
	start(writer)
	start(reader)
	start(csv)
	r.Close()
	w.Close()
	for _, c := range []*exec.Cmd{writer, reader, csv} {
		if err := c.Wait(); err != nil {
			msg, _ := os.ReadFile(stderr.Name())
			t.Fatalf("%v: %v: %s", c.Args, err, msg)
		}
	}
	if out.String() != fused.stdout {
		t.Fatalf("piped gives %q, run gives %q", out.String(), fused.stdout)
	}
	wc, rc, base := cpu(writer), cpu(reader), cpu(version)
	t.Logf("cpu: niced scan %v, sum-by %v, sluice --version %v", wc, rc, base)
	if wc <= rc || wc <= 2*base {
		t.Fatalf("the scan's work left its process: niced scan used %v of cpu, sum-by %v, a bare start %v", wc, rc, base)
	}
}
