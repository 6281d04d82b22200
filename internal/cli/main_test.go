package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var sluiceBin string

// TestMain builds the binary once; the tests run it as a user would.
func TestMain(m *testing.M) {
	// Tests reach 127.0.0.1 only; the credential chain must not try the
	// instance metadata service.
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	dir, err := os.MkdirTemp("", "sluice-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// sluice runs sluice-full from its own directory for gs:// and the
	// kubernetes executor, as go install places them.
	sluiceBin = filepath.Join(dir, "sluice")
	for _, prog := range []string{"sluice", "sluice-full"} {
		// Built as the README installs them: without cgo, which sluice
		// does not use and which costs every process's start.
		build := exec.Command("go", "build", "-o", filepath.Join(dir, prog), "github.com/sluice-data/sluice/cmd/"+prog)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", prog, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func sluice(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return sluiceIn(t, "", env, args...)
}

// sluiceIn runs sluice in dir ("" for the test's own), so that a
// relative path it writes by mistake lands where the test can look.
func sluiceIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	out, stderr, code := runCmd(t, dir, env, sluiceBin, args...)
	return result{string(out), stderr, code}
}

// runCmd runs name in dir ("" for the test's own) with env added to the
// test's environment, and returns its stdout, stderr and exit code. Two
// minutes bound a hang; a command that cannot run fails the test.
func runCmd(t *testing.T, dir string, env []string, name string, args ...string) ([]byte, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s %v: %v", filepath.Base(name), args, err)
	}
	return out.Bytes(), errb.String(), code
}

// withoutJobLine is stderr without the line a fanned-out run starts with
// (where its job is, should the driver die), which comes before any
// error.
func withoutJobLine(stderr string) string {
	if first, rest, ok := strings.Cut(stderr, "\n"); ok && strings.HasPrefix(first, "sluice: job ") && strings.Contains(first, "(if this process dies: ") {
		return rest
	}
	return stderr
}

// assertCleanFailure checks the rule for bad input: one line on stderr, a
// given non-zero exit, no panic or stack trace.
func assertCleanFailure(t *testing.T, r result, code int, mention string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(withoutJobLine(r.stderr)), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "sluice: ") {
		t.Errorf("stderr is not one 'sluice: ...' line: %q", r.stderr)
	}
	if !strings.Contains(r.stderr, mention) {
		t.Errorf("stderr %q does not mention %q", r.stderr, mention)
	}
	if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "panic") {
		t.Errorf("stack trace on stderr: %q", r.stderr)
	}
}

// badInput is a command line that must fail cleanly (assertCleanFailure).
type badInput struct {
	name    string
	args    []string
	code    int
	mention string
}

// assertBadInputs runs each case with env in a subtest of its own; none
// may leave a file in dir.
func assertBadInputs(t *testing.T, env []string, dir string, cases []badInput) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sluice(t, env, c.args...)
			assertCleanFailure(t, r, c.code, c.mention)
			// A context said twice ("join (right side): join (right
			// side): ...") is an error wrapped by two layers.
			parts := strings.Split(strings.TrimSpace(r.stderr), ": ")
			for i := 1; i < len(parts); i++ {
				if parts[i] == parts[i-1] {
					t.Errorf("%q says %q twice", r.stderr, parts[i])
				}
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("failed commands left files behind: %v", entries)
	}
}

// assertExamples checks that each command's --help has examples.
func assertExamples(t *testing.T, commands ...string) {
	t.Helper()
	for _, c := range commands {
		r := sluice(t, nil, c, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "Examples:") {
			t.Errorf("%s --help has no Examples section (exit %d)", c, r.code)
		}
	}
}

func TestVersionAndHelp(t *testing.T) {
	r := sluice(t, nil, "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sluice ") {
		t.Fatalf("version: %+v", r)
	}
	assertExamples(t, "ls", "rm", "mb", "cp", "gen", "server", "demo", "version")
}

func TestGenAndLs(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "lineitem")
	r := sluice(t, nil, "gen", "lineitem", "--rows", "20000", "--files", "2", "--out", out, "-q")
	if r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	r = sluice(t, nil, "ls", out)
	if r.code != 0 {
		t.Fatalf("ls: %+v", r)
	}
	if !strings.Contains(r.stdout, "part-00000.parquet") || !strings.Contains(r.stdout, "part-00001.parquet") {
		t.Fatalf("ls does not show the files: %s", r.stdout)
	}
	if !regexp.MustCompile(`(?m)^2 objects, \d+ bytes`).MatchString(r.stdout) {
		t.Fatalf("ls has no total line: %s", r.stdout)
	}
}

func TestVersionFlag(t *testing.T) {
	r := sluice(t, nil, "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "sluice ") || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("--version: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []badInput{
		{"unknown scheme", []string{"ls", "hdfs://bucket/x"}, exitUsage, "unknown scheme"},
		{"missing bucket", []string{"ls", "s3:///x"}, exitUsage, "missing bucket"},
		{"key escaping", []string{"ls", "mem://m/../up"}, exitUsage, "'..'"},
		{"unknown flag", []string{"ls", "--nope", dir}, exitUsage, "unknown flag"},
		{"bad sim", []string{"ls", dir, "--sim", "ttfb=fast"}, exitUsage, "ttfb"},
		{"gen without out", []string{"gen", "lineitem"}, exitUsage, "--out"},
		{"gen bad dataset", []string{"gen", "orders", "--out", dir}, exitUsage, "lineitem, taxi or tpch"},
		{"gen zero rows", []string{"gen", "taxi", "--rows", "0", "--out", dir}, exitUsage, "--rows must be at least 1"},
		{"unreachable endpoint", []string{"ls", "s3://b/", "--endpoint", "http://127.0.0.1:1"}, exitError, "127.0.0.1:1"},
		{"get without port", []string{"get", "grpc://127.0.0.1", "x"}, exitUsage, "grpc://HOST:PORT"},
		{"get unreachable", []string{"get", "grpc://127.0.0.1:1", "x"}, exitError, "is unreachable: connection refused"},
		{"serve nothing", []string{"serve", filepath.Join(dir, "nope"), "--addr", "127.0.0.1:0"}, exitNotFound, "nothing there to serve"},
		{"from-csv missing file", []string{"from-csv", filepath.Join(dir, "nope.csv")}, exitNotFound, "nope.csv"},
	}
	env := []string{"AWS_ACCESS_KEY_ID=x", "AWS_SECRET_ACCESS_KEY=y", "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"}
	assertBadInputs(t, env, dir, cases)
}

// TestServerEndToEnd runs `sluice server` and lists it through S3.
func TestServerEndToEnd(t *testing.T) {
	dir := t.TempDir()
	env := startServer(t, dir)
	if len(env) != 4 {
		t.Fatalf("server printed %d exports, want 4: %v", len(env), env)
	}
	r := sluice(t, env, "gen", "taxi", "--rows", "5000", "--files", "1", "--out", "s3://bkt/taxi/", "-q")
	if r.code != 0 {
		t.Fatalf("gen into the server: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "bkt", "taxi", "part-00000.parquet")); err != nil {
		t.Fatalf("the served directory does not hold the object: %v", err)
	}
	r = sluice(t, env, "ls", "s3://bkt/taxi/")
	if r.code != 0 || !strings.Contains(r.stdout, " part-00000.parquet\n") || !strings.Contains(r.stdout, "\n1 object, ") {
		t.Fatalf("ls through the server: %+v", r)
	}
	r = sluice(t, env, "ls", "s3://nosuchbucket/")
	assertCleanFailure(t, r, exitNotFound, "nosuchbucket")
}

// TestDemo: the demo fits an 80-column terminal and ends with the
// side-by-side figure, plain reader against sluice, as a ratio.
func TestDemo(t *testing.T) {
	r := sluice(t, nil, "demo", "--rows", "20000", "--files", "2", "--runs", "1", "-q")
	if r.code != 0 {
		t.Fatalf("demo: %+v", r)
	}
	for i, line := range strings.Split(r.stdout, "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
		}
	}
	for _, want := range []string{"http://127.0.0.1:", "part-00001.parquet", "arrow-go's plain Parquet reader"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	m := regexp.MustCompile(`\nsluice read it ([0-9.]+)x faster than a plain Parquet reader`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no closing figure:\n%s", r.stdout)
	}
	if x, err := strconv.ParseFloat(m[1], 64); err != nil || x <= 0 {
		t.Errorf("closing ratio %q", m[1])
	}
}

// A stage run with nothing piped in says so at once instead of waiting
// for a person to type an Arrow stream. script(1) gives it a terminal.
func TestStageOnATerminalSaysWhatItWants(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to make a terminal")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, script, "-qec", sluiceBin+" show", "/dev/null").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "stdin is a terminal") {
		t.Fatalf("show on a terminal: %v, output %q", err, out)
	}
}

// scan -o - with stdout on a terminal refuses to dump binary there, in
// one line with a usage exit, before reading anything.
func TestScanToTerminalRefuses(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to make a terminal")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, script, "-qec", sluiceBin+" scan "+t.TempDir()+" -o -", "/dev/null").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(string(out), "sluice show") || strings.Count(strings.TrimSpace(string(out)), "\n") != 0 {
		t.Fatalf("scan -o - on a terminal: %v, output %q", err, out)
	}
}
