// Package slurm is fanout's Slurm executor: each phase of a job one
// array job, submitted with sbatch and followed with squeue.
package slurm

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-data/sluice/fanout"
)

// Executor runs each phase as a Slurm array job: `sbatch --array=0-N%W`,
// each task's index in SLURM_ARRAY_TASK_ID. Slurm does not retry a
// failed array task, so the indexes without a done record are submitted
// again as a smaller array, up to Attempts times.
type Executor struct {
	// Command is the worker's command before its arguments; nil means
	// this executable with the argument "worker". It must exist, at the
	// same path, on the nodes.
	Command []string
	// Env is added to the environment sbatch passes on to the tasks.
	// The tasks get only the variables Exported names (--export=NAMES),
	// never the driver's whole environment, so that no secret of it
	// reaches Slurm's job records.
	Env []string
	// Sbatch holds further sbatch arguments (--partition, --time, ...).
	Sbatch []string
	// LogDir is where the tasks write their output, which the driver
	// reads for a failed task's last lines: a directory the nodes share
	// with the driver. Empty means a new temporary directory, removed at
	// the end (fine on one node).
	LogDir string
	// Poll is how often squeue is asked; default 250ms.
	Poll time.Duration
}

// New returns a Slurm executor running command (nil: this executable's
// worker command).
func New(command []string) *Executor { return &Executor{Command: command} }

func (s *Executor) command() ([]string, error) {
	if len(s.Command) > 0 {
		return s.Command, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{self, "worker"}, nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// script is the batch script of an array: the worker, with an attempt
// label naming the Slurm job.
func (s *Executor) script(a fanout.PhaseRun) (string, error) {
	argv, err := s.command()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("SLUICE_ATTEMPT=slurm-${SLURM_ARRAY_JOB_ID}-${SLURM_ARRAY_TASK_ID}\nexport SLUICE_ATTEMPT\nexec")
	for _, w := range append(append([]string(nil), argv...), a.Args()...) {
		b.WriteString(" " + shellQuote(w))
	}
	b.WriteString("\n")
	return b.String(), nil
}

// passed are the variables a worker may need, passed by name when set:
// its command's path and home, the Go runtime's settings, sluice's own,
// and an S3 client's settings other than the secrets (secretNames).
var passed = []string{"PATH", "HOME", "USER", "TMPDIR", "TZ", "LANG", "LC_ALL",
	"GODEBUG", "GOGC", "GOMEMLIMIT", "GOMAXPROCS"}

// secretNames are the credentials of an S3 client's environment: a
// worker gets them through a file (credentialsFile), not by name.
var secretNames = map[string]bool{"AWS_ACCESS_KEY_ID": true, "AWS_SECRET_ACCESS_KEY": true, "AWS_SESSION_TOKEN": true}

// secretLike says a variable's name says it holds a secret (a token, a
// password): such a one is never exported, whatever its prefix.
func secretLike(name string) bool {
	for _, w := range []string{"TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// Exported is the list of names --export gives sbatch for environment
// env (NAME=VALUE; the later of a name wins): those of passed, every
// SLUICE_ and AWS_ variable but the secrets and those whose names say
// they hold one, and the names of extra (the executor's Env, which the
// user gave), sorted.
func Exported(env, extra []string) []string {
	names := map[string]bool{}
	for _, nv := range env {
		name, _, _ := strings.Cut(nv, "=")
		if slices.Contains(passed, name) || (strings.HasPrefix(name, "SLUICE_") || strings.HasPrefix(name, "AWS_")) && !secretNames[name] && !secretLike(name) {
			names[name] = true
		}
	}
	for _, nv := range extra {
		name, _, _ := strings.Cut(nv, "=")
		names[name] = true
	}
	return slices.Sorted(maps.Keys(names))
}

// credentialsProfile is the profile of the file credentialsFile writes.
const credentialsProfile = "sluice-job"

// credentialsFile writes the S3 credentials of env, when it holds static
// keys, to a file of dir readable by this user alone, and returns the
// variables that point a worker's S3 client at it; none without keys.
// The values then never reach Slurm: sbatch sends slurmctld the names
// it exports and their values, and slurmctld keeps them with the job.
func credentialsFile(dir string, env []string) (vars []string, remove func(), err error) {
	vals := map[string]string{}
	for _, nv := range env {
		if name, v, ok := strings.Cut(nv, "="); ok && secretNames[name] {
			vals[name] = v
		}
	}
	remove = func() {}
	if vals["AWS_ACCESS_KEY_ID"] == "" || vals["AWS_SECRET_ACCESS_KEY"] == "" {
		return nil, remove, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n", credentialsProfile, vals["AWS_ACCESS_KEY_ID"], vals["AWS_SECRET_ACCESS_KEY"])
	if t := vals["AWS_SESSION_TOKEN"]; t != "" {
		fmt.Fprintf(&b, "aws_session_token = %s\n", t)
	}
	f, err := os.CreateTemp(dir, "credentials-")
	if err != nil {
		return nil, remove, err
	}
	path := f.Name()
	remove = func() { os.Remove(path) }
	// CreateTemp makes the file 0600: no other user reads it.
	_, err = f.WriteString(b.String())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		remove()
		return nil, func() {}, err
	}
	return []string{"AWS_SHARED_CREDENTIALS_FILE=" + path, "AWS_PROFILE=" + credentialsProfile, fanout.EnvDriverFiles + "=" + path}, remove, nil
}

// sbatchArgs are sbatch's arguments for the indexes idx of a, whose
// tasks get the variables named in exported.
func (s *Executor) sbatchArgs(a fanout.PhaseRun, idx []int, logDir string, exported []string) []string {
	return append([]string{"--parsable", "--export=" + strings.Join(exported, ","), "--job-name=" + a.Name(),
		fmt.Sprintf("--array=%s%%%d", indexList(idx), max(a.Workers, 1)),
		"--output=" + filepath.Join(logDir, "%A_%a.log"),
		// A worker is one process; its threads are --threads'.
		"--ntasks=1", "--no-requeue"}, s.Sbatch...)
}

// Manifest is the batch script and the sbatch command that would run a.
func (s *Executor) Manifest(a fanout.PhaseRun) ([]byte, error) {
	script, err := s.script(a)
	if err != nil {
		return nil, err
	}
	idx := make([]int, a.Tasks)
	for i := range idx {
		idx[i] = i
	}
	logDir := s.LogDir
	if logDir == "" {
		logDir = "." // where sbatch is run
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# phase %d (%s): %d task(s)\n", a.Phase, a.Kind, a.Tasks)
	b.WriteString("# The tasks get the variables --export names from the shell that runs sbatch;\n" +
		"# S3 credentials through AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE, or the nodes' own.\n# sbatch")
	for _, w := range s.sbatchArgs(a, idx, logDir, Exported(append(os.Environ(), s.Env...), []string{"AWS_SHARED_CREDENTIALS_FILE", "AWS_PROFILE"})) {
		b.WriteString(" " + shellQuote(w))
	}
	b.WriteString(" <<'EOF'\n" + script + "EOF\n")
	return b.Bytes(), nil
}

// Runnable is a Manifest as a shell runs it: its sbatch line, a comment
// in the manifest, made a command, with the batch script its
// here-document.
func Runnable(manifest []byte) []byte {
	return bytes.Replace(manifest, []byte("\n# sbatch "), []byte("\nsbatch "), 1)
}

// RunPhase submits the phase's tasks, waits for them, and submits those
// without a done record again until each has one or Attempts runs.
func (s *Executor) RunPhase(ctx context.Context, a fanout.PhaseRun) error {
	script, err := s.script(a)
	if err != nil {
		return err
	}
	logDir := s.LogDir
	if logDir == "" {
		logDir, err = os.MkdirTemp("", "sluice-slurm-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(logDir)
	}
	env := append(os.Environ(), s.Env...)
	creds, remove, err := credentialsFile(logDir, env)
	if err != nil {
		return fmt.Errorf("slurm: the workers' credentials: %w", err)
	}
	defer remove()
	env = append(env, creds...)
	exported := Exported(env, append(slices.Clone(s.Env), creds...))
	todo := make([]int, a.Tasks)
	for i := range todo {
		todo[i] = i
	}
	retried := 0
	for attempt := 1; ; attempt++ {
		id, err := s.submit(ctx, a, todo, script, logDir, env, exported)
		if err != nil {
			return err
		}
		done := a.Tasks - len(todo)
		if err := s.wait(ctx, id, func(pending, running int) {
			if a.Progress != nil {
				a.Progress(fanout.Progress{Phase: a.Kind, Tasks: a.Tasks, Done: done + len(todo) - pending - running, Running: running, Failed: retried})
			}
		}); err != nil {
			return err
		}
		var failed []int
		for _, i := range todo {
			ok := true
			if a.Done != nil {
				if ok, _, err = a.Done(ctx, i); err != nil {
					return err
				}
			} else {
				ok = s.exitCode(ctx, id, i) == "0:0"
			}
			if !ok {
				failed = append(failed, i)
			}
		}
		if len(failed) == 0 {
			return nil
		}
		if attempt >= max(a.Attempts, 1) {
			i := failed[0]
			log, _ := os.ReadFile(filepath.Join(logDir, fmt.Sprintf("%s_%d.log", id, i)))
			msg := fanout.LastLines(string(log), 3)
			if code, sig, _ := strings.Cut(s.exitCode(ctx, id, i), ":"); code != "" && code != "0" {
				msg = "exit code " + code + ": " + msg
			} else if sig != "" && sig != "0" {
				msg = "signal " + sig + ": " + msg
			}
			return &fanout.TaskError{Task: i, Worker: fmt.Sprintf("slurm job %s_%d", id, i), Attempts: attempt, Err: msg}
		}
		retried += len(failed)
		todo = failed
		if a.Log != nil {
			a.Log("%s: slurm job %s left %d task(s) without a done record (%s); submitting them again", a.Kind, id, len(failed), indexList(failed))
		}
	}
}

// submit runs sbatch for the indexes idx and returns the array's job ID.
func (s *Executor) submit(ctx context.Context, a fanout.PhaseRun, idx []int, script, logDir string, env, exported []string) (string, error) {
	cmd := exec.CommandContext(ctx, "sbatch", s.sbatchArgs(a, idx, logDir, exported)...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(script)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return "", context.Cause(ctx)
		}
		return "", fmt.Errorf("sbatch: %v: %s", err, fanout.LastLines(errb.String(), 1))
	}
	// --parsable prints "id" or "id;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if id == "" {
		return "", fmt.Errorf("sbatch printed no job ID: %q", out)
	}
	return id, nil
}

// wait polls squeue until the array has no task left pending, running or
// completing; on ctx's end it cancels the array and waits for that.
func (s *Executor) wait(ctx context.Context, id string, progress func(pending, running int)) error {
	poll := s.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			s.cancel(id)
			return context.Cause(ctx)
		case <-tick.C:
		}
		states, err := s.states(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			// slurmctld may be busy for a moment; give up after ~30s.
			if failures++; failures*int(poll) > int(30*time.Second) {
				s.cancel(id)
				return err
			}
			continue
		}
		failures = 0
		if len(states) == 0 {
			return nil
		}
		pending, running := 0, 0
		for _, st := range states {
			if st == "PENDING" {
				pending++
			} else {
				running++
			}
		}
		progress(pending, running)
	}
}

// states lists the states of the array's tasks that have not ended.
func (s *Executor) states(ctx context.Context, id string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "squeue", "-h", "-r", "-j", id, "-o", "%T")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		// A job that ended long ago is no longer known at all.
		if strings.Contains(errb.String(), "Invalid job id") {
			return nil, nil
		}
		return nil, fmt.Errorf("squeue: %v: %s", err, fanout.LastLines(errb.String(), 1))
	}
	var states []string
	for _, l := range strings.Fields(string(out)) {
		switch l {
		case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "PREEMPTED":
		default:
			states = append(states, l)
		}
	}
	return states, nil
}

// exitCode is Slurm's "code:signal" of array task i, empty when it is
// no longer known.
func (s *Executor) exitCode(ctx context.Context, id string, i int) string {
	out, err := exec.CommandContext(ctx, "scontrol", "-o", "show", "job", fmt.Sprintf("%s_%d", id, i)).Output()
	if err != nil {
		return ""
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "ExitCode="); ok {
			return v
		}
	}
	return ""
}

// cancel cancels the array and waits (up to a minute) until none of its
// tasks is left.
func (s *Executor) cancel(id string) error {
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	if out, err := exec.CommandContext(ctx, "scancel", id).CombinedOutput(); err != nil {
		return fmt.Errorf("scancel %s: %v: %s", id, err, fanout.LastLines(string(out), 1))
	}
	for ctx.Err() == nil {
		states, err := s.states(ctx, id)
		if err == nil && len(states) == 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("slurm job %s: still running a minute after scancel", id)
}

// indexList writes task indexes as Slurm's --array takes them and
// Kubernetes writes completedIndexes: ascending, runs as ranges
// ("0-3,5,7-9").
func indexList(idx []int) string {
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return b.String()
}

// Every phase can be shown before it is submitted (sluice run --dry-run).
var _ fanout.Manifester = (*Executor)(nil)
