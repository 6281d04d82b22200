package cli

import (
	"bufio"
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// catFixture writes files cat and cp read: one over two 8 MiB windows, a
// small one, an empty one, and a directory with a subdirectory.
func catFixture(t *testing.T) (dir string, files map[string][]byte) {
	t.Helper()
	dir = t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 17<<20+123)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	files = map[string][]byte{
		"big.bin":       big,
		"small.txt":     []byte("hello\n"),
		"empty":         nil,
		"d/a.txt":       []byte("a\n"),
		"d/sub/b.txt":   []byte("b\n"),
		"d/sub/c.bin":   big[:3<<20],
		"d/z-empty.txt": nil,
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

func TestCat(t *testing.T) {
	dir, files := catFixture(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	concat := func(names ...string) string {
		var b bytes.Buffer
		for _, n := range names {
			b.Write(files[n])
		}
		return b.String()
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"objects in the order given", []string{p("small.txt"), p("big.bin"), p("empty"), p("small.txt")}, concat("small.txt", "big.bin", "empty", "small.txt")},
		{"a directory in key order", []string{p("d") + "/"}, concat("d/a.txt", "d/sub/b.txt", "d/sub/c.bin", "d/z-empty.txt")},
		{"a directory without its slash", []string{p("d")}, concat("d/a.txt", "d/sub/b.txt", "d/sub/c.bin", "d/z-empty.txt")},
		{"a small budget", []string{"--memory", "1MiB", p("big.bin")}, concat("big.bin")},
		{"under faults", []string{"--sim", "ttfb=1ms,stream=400MiB/s,slowdown=0.1,reset=0.2,seed=3", "--stats", p("big.bin"), p("d/sub/c.bin")}, concat("big.bin", "d/sub/c.bin")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sluice(t, nil, append([]string{"cat"}, c.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if r.stdout != c.want {
				t.Fatalf("stdout: %d bytes that differ from the %d expected", len(r.stdout), len(c.want))
			}
			if strings.Contains(strings.Join(c.args, " "), "--stats") && !strings.Contains(r.stderr, "retries") {
				t.Errorf("--stats printed no statistics: %q", r.stderr)
			}
		})
	}
}

func TestCatAndCpBadInput(t *testing.T) {
	dir, _ := catFixture(t)
	out := t.TempDir()
	cases := []badInput{
		{"cat nothing", []string{"cat"}, exitUsage, "one or more URLs"},
		{"cat missing", []string{"cat", filepath.Join(dir, "nope")}, exitNotFound, "nope"},
		{"cat empty prefix", []string{"cat", "mem://m/nothing/"}, exitNotFound, "no objects"},
		{"cat bad memory", []string{"cat", "--memory", "lots", filepath.Join(dir, "small.txt")}, exitUsage, "--memory"},
		{"cat tiny memory", []string{"cat", "--memory", "4KiB", filepath.Join(dir, "small.txt")}, exitUsage, "at least 1MiB"},
		{"cat bad sim", []string{"cat", "--sim", "stream=fast", filepath.Join(dir, "small.txt")}, exitUsage, "stream"},
		{"cat bad scheme", []string{"cat", "hdfs://b/k"}, exitUsage, "unknown scheme"},
		{"cp one argument", []string{"cp", filepath.Join(dir, "small.txt")}, exitUsage, "2 argument"},
		{"cp missing source", []string{"cp", filepath.Join(dir, "nope"), out + "/"}, exitNotFound, "nope"},
		{"cp onto itself", []string{"cp", filepath.Join(dir, "small.txt"), filepath.Join(dir, "small.txt")}, exitUsage, "both source and destination"},
		{"cp bad destination", []string{"cp", filepath.Join(dir, "small.txt"), "hdfs://b/k"}, exitUsage, "unknown scheme"},
	}
	assertBadInputs(t, nil, out, cases)
}

func TestCatAndCpHelp(t *testing.T) { assertExamples(t, "cat", "cp") }

// startServer runs `sluice server` over dir and returns the environment
// that points the AWS chain at it.
func startServer(t *testing.T, dir string, flags ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, sluiceBin, append([]string{"server", "--dir", dir, "--addr", "127.0.0.1:0", "--bucket", "bkt"}, flags...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	var env []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "export "); ok {
			env = append(env, v)
		}
		if strings.HasPrefix(line, "press Ctrl-C") {
			break
		}
	}
	if len(env) == 0 {
		t.Fatal("server printed no exports")
	}
	return env
}
