package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/testenv"
)

// needSlurm skips a test unless a Slurm controller answers (failing
// under CI, which runs the tests as root through ./scripts/test, which
// starts one).
func needSlurm(t *testing.T) {
	t.Helper()
	out, err := exec.Command("sinfo", "-h", "-o", "%T").Output()
	if err == nil && strings.TrimSpace(string(out)) != "" && !strings.Contains(string(out), "down") {
		return
	}
	testenv.Unavailable(t, "no Slurm answers (sinfo: %v, %q); as root, scripts/slurm-up installs and starts a one-node Slurm (./scripts/test runs it when run as root)", err, out)
}

// slurmJobs lists the array tasks Slurm still knows of whose job name
// starts with prefix (every job of a sluice job is sluice-<id>-p<phase>).
func slurmJobs(t *testing.T, prefix string) []string {
	t.Helper()
	out, err := exec.Command("squeue", "-h", "-r", "-o", "%i %j %T").Output()
	if err != nil {
		t.Fatal(err)
	}
	var jobs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(l); len(f) == 3 && strings.HasPrefix(f[1], prefix) {
			jobs = append(jobs, l)
		}
	}
	return jobs
}

// waitSlurmRunning waits, up to a minute, for an array task of the run
// whose -v stderr is errb to run, and returns the job's ID (the hex of
// job-<hex>) and that task's Slurm job ID.
func waitSlurmRunning(t *testing.T, errb *bytes.Buffer) (id, slurmJob string) {
	t.Helper()
	// Polling squeue: Slurm tells us nothing.
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if id == "" {
			id = jobIDOf(errb.String())
			continue
		}
		for _, j := range slurmJobs(t, "sluice-"+id) {
			if f := strings.Fields(j); f[2] == "RUNNING" {
				slurmJob, _, _ = strings.Cut(f[0], "_")
				return id, slurmJob
			}
		}
	}
	t.Fatalf("no Slurm job ran within 60s: %s", errb.String())
	return "", ""
}

// jobID is the job's ID (the hex of job-<hex>) from a -v run's stderr.
func jobIDOf(stderr string) string {
	i := strings.Index(stderr, "/job-")
	if i < 0 {
		return ""
	}
	id, _, _ := strings.Cut(stderr[i+len("/job-"):], "/")
	return id
}

// TestRunSlurmMatchesOneProcess: queries A, B and a shuffle through
// Slurm array jobs give the bytes of one process, and leave no object
// and no Slurm job.
func TestRunSlurmMatchesOneProcess(t *testing.T) {
	needSlurm(t)
	tg := localTarget(t)
	for _, q := range []string{"A", "B", "shuffle"} {
		stderr := runBoth(t, tg, q, "--executor", "slurm", "--piece-size", "128KiB")
		if !strings.Contains(stderr, "phase 0 (map)") {
			t.Errorf("%s: no map phase in the log: %s", q, stderr)
		}
		if left := tg.left(t); len(left) != 0 {
			t.Fatalf("%s: objects left under %s: %q", q, tg.jobs, left)
		}
		if id := jobIDOf(stderr); id == "" {
			t.Errorf("%s: no job ID in the log: %s", q, stderr)
		} else if jobs := slurmJobs(t, "sluice-"+id); len(jobs) != 0 {
			t.Fatalf("%s: Slurm jobs left: %q", q, jobs)
		}
	}
}

// TestRunSlurmFailingTask: a task that fails every attempt fails the
// job with one line naming the task, its piece, the Slurm job and the
// worker's last log line, and leaves no object.
func TestRunSlurmFailingTask(t *testing.T) {
	needSlurm(t)
	t.Log(runFailingTask(t, nil, []string{"--executor", "slurm"}, "on worker slurm job ", "exit code 1: ", "parquet"))
}

// TestRunSlurmInterrupt: Ctrl-C at the driver cancels the array job and
// removes the job's objects.
func TestRunSlurmInterrupt(t *testing.T) {
	needSlurm(t)
	tg := localTarget(t)
	cmd, _, errb := startRun(t, nil, "run", "--executor", "slurm", "--workers", "3", "--store", tg.jobs, "-v",
		"--x-pause-before-commit", "60s", tg.query("A")+" | show")
	id, _ := waitSlurmRunning(t, errb)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupt {
		t.Fatalf("exit %d (%v), want %d: %s", code, err, exitInterrupt, errb.String())
	}
	if jobs := slurmJobs(t, "sluice-"+id); len(jobs) != 0 {
		t.Fatalf("Slurm jobs left: %q", jobs)
	}
	if left := tg.left(t); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
}

// TestRunSlurmCancelledTask: an array task killed mid-task (scancel of
// one index), after writing its output and before committing it, is
// submitted again, and the results stay those of one process.
func TestRunSlurmCancelledTask(t *testing.T) {
	needSlurm(t)
	tg := localTarget(t)
	want := sluice(t, nil, "run", tg.query("shuffle")+" | show")
	if want.code != 0 {
		t.Fatal(want.stderr)
	}
	cmd, out, errb := startRun(t, nil, "run", "--executor", "slurm", "--workers", "4", "--store", tg.jobs, "--piece-size", "128KiB", "-v",
		"--x-pause-before-commit", "2s", tg.query("shuffle")+" | show")
	// The victim is held stopped between its output and its commit;
	// SIGKILL through Slurm (a plain scancel sends SIGCONT before
	// SIGTERM, which would let it commit first) ends it there.
	w := freezeMidTask(t, tg, 60*time.Second)
	job, index, ok := strings.Cut(strings.TrimPrefix(w.attempt, "slurm-"), "-")
	if !ok {
		t.Fatalf("worker pid %d: attempt %q is not a Slurm array task's", w.pid, w.attempt)
	}
	victim := job + "_" + index
	if b, err := exec.Command("scancel", "--signal=KILL", "--full", victim).CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v: %s", victim, err, b)
	}
	err := cmd.Wait()
	if err != nil || out.String() != want.stdout {
		t.Fatalf("cancelled %s: %v: %s\ngot:\n%s\nwant:\n%s", victim, err, errb.String(), out.String(), want.stdout)
	}
	if !strings.Contains(errb.String(), "without a done record") || !strings.Contains(errb.String(), "submitting them again") {
		t.Fatalf("the driver did not submit the cancelled task %s again: %s", victim, errb.String())
	}
	if left := tg.left(t); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
	t.Logf("killed array task %s (phase %d) between its output and its commit; submitted again, results identical", victim, w.phase)
}

// TestRunSlurmDryRun: what --dry-run prints runs as is in a shell: its
// sbatch line submits the first phase, whose tasks all leave their done
// records beside the spec the dry run wrote (the only object it wrote);
// the later phase is there, commented out.
func TestRunSlurmDryRun(t *testing.T) {
	needSlurm(t)
	tg := localTarget(t)
	r := sluice(t, nil, "run", "--workers", "2", "--executor", "slurm", "--store", tg.jobs, "--piece-size", "128KiB", "--dry-run", tg.query("shuffle"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if left := tg.left(t); len(left) != 1 || !strings.HasSuffix(left[0], "/job.json") {
		t.Fatalf("the dry run wrote %q, want the job's spec alone", left)
	}
	if !strings.Contains(r.stdout, "\n# phase 1 runs once the driver has committed phase 0") || !strings.Contains(r.stdout, "\n# # sbatch ") {
		t.Errorf("no commented-out phase 1 in:\n%s", r.stdout)
	}
	sh := exec.Command("sh")
	sh.Dir = t.TempDir() // the tasks' logs go here
	sh.Stdin = strings.NewReader(r.stdout)
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("sh: %v: %s\n%s", err, out, r.stdout)
	}
	id := strings.TrimSpace(string(out))
	want := mapTasks(t, r.stdout)
	var done int
	// Polling the records the array tasks write.
	for deadline := time.Now().Add(2 * time.Minute); done != want && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		done = 0
		for _, k := range tg.left(t) {
			if strings.Contains(k, "/p0/done/") {
				done++
			}
		}
	}
	if done != want {
		t.Fatalf("slurm job %s: %d done records, want %d (one a map task): %q", id, done, want, tg.left(t))
	}
	t.Logf("slurm job %s ran the printed phase 0: %d task(s) done", id, done)
}

// mapTasks is the number of tasks of phase 0 in a dry run's output
// ("# phase 0 (map): N task(s)").
func mapTasks(t *testing.T, out string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(out, "# phase 0 (map): %d task(s)", &n); err != nil {
		t.Fatalf("no phase 0 line in %q: %v", out, err)
	}
	return n
}

// TestRunSlurmKeepsSecretsOut: the S3 keys of the driver's environment
// reach the array tasks (the job succeeds against MinIO) but not Slurm:
// neither the job's record (scontrol show job), its batch script nor
// anything slurmctld keeps in its state directory (where the job's
// environment is) holds the secret.
func TestRunSlurmKeepsSecretsOut(t *testing.T) {
	needSlurm(t)
	tg := minioTarget(t)
	secret, key := os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_ACCESS_KEY_ID")
	if secret == "" || key == "" {
		t.Fatal("no AWS_SECRET_ACCESS_KEY and AWS_ACCESS_KEY_ID in the environment (./scripts/test sets MinIO's)")
	}
	q := tg.query("A") + " | show"
	want := sluice(t, tg.env, "run", q)
	if want.code != 0 {
		t.Fatal(want.stderr)
	}
	cmd, out, errb := startRun(t, tg.env, "run", "--executor", "slurm", "--workers", "2", "--store", tg.jobs, "-v",
		"--x-pause-before-commit", "3s", q)
	_, running := waitSlurmRunning(t, errb)
	cfg, err := exec.Command("scontrol", "show", "config").Output()
	if err != nil {
		t.Fatal(err)
	}
	var stateDir string
	for _, l := range strings.Split(string(cfg), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "StateSaveLocation" {
			stateDir = strings.TrimSpace(v)
		}
	}
	if stateDir == "" {
		t.Fatalf("no StateSaveLocation in scontrol show config")
	}
	records := map[string][]byte{}
	for _, args := range [][]string{{"show", "job", "-d", running}, {"write", "batch_script", running, "-"}} {
		b, err := exec.Command("scontrol", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("scontrol %s: %v: %s", strings.Join(args, " "), err, b)
		}
		records["scontrol "+strings.Join(args, " ")] = b
	}
	filepath.WalkDir(stateDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if b, err := os.ReadFile(path); err == nil {
				records[path] = b
			}
		}
		return nil
	})
	var withEnv int
	for name, b := range records {
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the S3 credentials", name)
		}
		if bytes.Contains(b, []byte("AWS_SHARED_CREDENTIALS_FILE=")) {
			withEnv++
		}
	}
	if withEnv == 0 {
		t.Errorf("no job environment found among the %d records under %s and scontrol's answers", len(records), stateDir)
	}
	if err := cmd.Wait(); err != nil || out.String() != want.stdout {
		t.Fatalf("%v: %s\ngot:\n%s\nwant:\n%s", err, errb.String(), out.String(), want.stdout)
	}
}

// TestRunSlurmDriverKilled: array tasks whose driver was SIGKILLed (no
// signal reaches them: slurmd started them) stop once its lease lapses,
// and --resume finishes the job with one process's results.
func TestRunSlurmDriverKilled(t *testing.T) {
	needSlurm(t)
	tg := localTarget(t)
	q := tg.query("shuffle") + " | show"
	want := sluice(t, nil, "run", q)
	if want.code != 0 {
		t.Fatal(want.stderr)
	}
	const every = 500 * time.Millisecond
	// With S3 keys the driver writes the workers' credentials file in
	// its log folder under TMPDIR; its workers remove it once they find
	// the driver gone.
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp, "AWS_ACCESS_KEY_ID=driver-kill-test", "AWS_SECRET_ACCESS_KEY=driver-kill-secret"}
	cmd, _, errb := startRun(t, env, "run", "--executor", "slurm", "--workers", "2", "--store", tg.jobs, "--piece-size", "128KiB",
		"--x-lease-every", every.String(), "--x-pause-before-commit", "10m", q)
	id, _ := waitSlurmRunning(t, errb)
	creds := filepath.Join(tmp, "sluice-slurm-*", "credentials-*")
	if m, _ := filepath.Glob(creds); len(m) != 1 {
		t.Fatalf("want the workers' credentials file, found %q", m)
	}
	cmd.Process.Kill()
	cmd.Wait()
	killed := time.Now()
	// Each task stops within (LeaseMisses+1) x every of its start; the
	// tasks still pending start, find the lease lapsed and stop too.
	var left []string
	for left = slurmJobs(t, "sluice-"+id); len(left) > 0 && time.Since(killed) < 2*time.Minute; left = slurmJobs(t, "sluice-"+id) {
		time.Sleep(200 * time.Millisecond) // polling squeue
	}
	if len(left) > 0 {
		t.Fatalf("Slurm jobs of the dead driver still there after %v: %q", time.Since(killed), left)
	}
	t.Logf("the dead driver's array tasks were gone %v after it was killed", time.Since(killed).Round(100*time.Millisecond))
	if m, _ := filepath.Glob(creds); len(m) != 0 {
		t.Fatalf("the dead driver's credentials file is still there after its workers stopped: %q", m)
	}
	job := strings.TrimSuffix(tg.jobs, "/") + "/job-" + id + "/"
	r := sluice(t, nil, "run", "--executor", "slurm", "--workers", "2", "--resume", job)
	if r.code != 0 || r.stdout != want.stdout {
		t.Fatalf("resume: exit %d: %s\ngot:\n%s\nwant:\n%s", r.code, r.stderr, r.stdout, want.stdout)
	}
	if left := tg.left(t); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
}
