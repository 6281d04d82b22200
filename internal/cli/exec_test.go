package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/internal/testenv"
)

// examplesDir holds the example programs of docs/examples.
func examplesDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	dir, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "docs", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// execEnv is the environment the exec tests run sluice in: the test's
// sluice first in PATH (an example runs it as its program).
func execEnv() []string {
	return []string{"PATH=" + filepath.Dir(sluiceBin) + ":" + os.Getenv("PATH")}
}

// needProgram stops a test without a program it runs (failing under CI).
func needProgram(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		testenv.Unavailable(t, "%s is not in PATH", name)
	}
}

// nodeArrow is the NODE_PATH under which node finds the npm package
// apache-arrow: ./scripts/test installs it (SLUICE_TEST_NODE_PATH), by
// default into ~/.cache/sluice-test/node. Without node or the package the
// test skips, failing under CI.
func nodeArrow(t *testing.T) string {
	t.Helper()
	needProgram(t, "node")
	dir := os.Getenv("SLUICE_TEST_NODE_PATH")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "sluice-test", "node", "node_modules")
	}
	if _, err := os.Stat(filepath.Join(dir, "apache-arrow", "package.json")); err != nil {
		testenv.Unavailable(t, "the npm package apache-arrow is not in %s (./scripts/test installs it)", dir)
	}
	return dir
}

// words joins a stage's words as the pipeline language and a shell both
// read them.
func words(w ...string) string {
	q := make([]string, len(w))
	for i, s := range w {
		q[i] = shellQuote(s)
	}
	return strings.Join(q, " ")
}

type execExample struct {
	name   string
	env    func(t *testing.T) []string
	scan   string   // the source, {taxi} and {lineitem} its datasets
	exec   []string // the exec stage's words, {ex} the examples' folder
	own    string   // the same with sluice's own stages
	worker []string // flags exec takes under --workers (a schema every piece shares)
}

var execExamples = []execExample{
	{
		name: "javascript apache-arrow",
		env:  func(t *testing.T) []string { return []string{"NODE_PATH=" + nodeArrow(t)} },
		scan: "scan {lineitem} --columns l_orderkey,l_extendedprice,l_discount",
		exec: []string{"exec", "--", "node", "{ex}/add-revenue.mjs"},
		own:  "extend 'l_extendedprice * (1 - l_discount) as revenue'",
	},
	{
		name:   "awk csv",
		env:    func(t *testing.T) []string { needProgram(t, "awk"); return nil },
		scan:   "scan {taxi}",
		exec:   []string{"exec", "--in", "csv", "--out", "csv", "--", "awk", "-f", "{ex}/big-fares.awk"},
		own:    `filter 'fare_amount > 20' | select "payment_type, fare_amount, tip_amount, payment_type = 'card' as card"`,
		worker: []string{"--schema", "payment_type=string,fare_amount=float64,tip_amount=float64,card=bool"},
	},
	{
		name:   "python3 json lines",
		env:    func(t *testing.T) []string { needProgram(t, "python3"); return nil },
		scan:   "scan {taxi}",
		exec:   []string{"exec", "--in", "jsonl", "--out", "jsonl", "--", "python3", "{ex}/tip-ratio.py"},
		own:    "select 'payment_type, case when fare_amount <> 0 then tip_amount / fare_amount end as tip_ratio'",
		worker: []string{"--schema", "payment_type=string,tip_ratio=float64"},
	},
	{
		name: "sluice filter",
		env:  func(t *testing.T) []string { return nil },
		scan: "scan {lineitem} --columns l_orderkey,l_returnflag,l_quantity",
		exec: []string{"exec", "--", "sluice", "filter", "l_quantity > 45 and l_returnflag <> 'N'"},
		own:  "filter \"l_quantity > 45 and l_returnflag <> 'N'\"",
	},
}

// TestExecExamples: each example program, fused in sluice run, piped as a
// command of its own and in the map tasks of run --workers 4, gives the
// bytes of to-csv that the same logic in sluice's own stages gives; the
// fanned-out run leaves nothing in its job store.
func TestExecExamples(t *testing.T) {
	dir := pipeData(t)
	ex := examplesDir(t)
	for _, c := range execExamples {
		t.Run(c.name, func(t *testing.T) {
			env := append(execEnv(), c.env(t)...)
			src := strings.NewReplacer("{taxi}", filepath.Join(dir, "taxi"), "{lineitem}", filepath.Join(dir, "lineitem")).Replace(c.scan)
			stage := make([]string, len(c.exec))
			for i, w := range c.exec {
				stage[i] = strings.ReplaceAll(w, "{ex}", ex)
			}
			want := sluice(t, env, "run", src+" | "+c.own+" | to-csv")
			if want.code != 0 || strings.Count(want.stdout, "\n") < 100 {
				t.Fatalf("own stages: exit %d, %d bytes: %s", want.code, len(want.stdout), want.stderr)
			}
			check := func(how string, out []byte, stderr string, code int) {
				t.Helper()
				if code != 0 {
					t.Fatalf("%s: exit %d: %s", how, code, stderr)
				}
				if !bytes.Equal(out, []byte(want.stdout)) {
					t.Fatalf("%s: %d bytes of CSV, not the %d of sluice's own stages; starts %q", how, len(out), len(want.stdout), out[:min(len(out), 200)])
				}
			}
			r := sluice(t, env, "run", src+" | "+words(stage...)+" | to-csv")
			check("fused", []byte(r.stdout), r.stderr, r.code)

			out, stderr, code := runCmd(t, "", env, "bash", "-o", "pipefail", "-c",
				"sluice run "+shellQuote(src)+" | sluice "+words(stage...)+" | sluice to-csv")
			check("piped", out, stderr, code)

			jobs := filepath.Join(t.TempDir(), "jobs") + "/"
			fanned := append(append([]string{stage[0]}, c.worker...), stage[1:]...)
			r = sluice(t, env, "run", "--workers", "4", "--store", jobs, src+" | "+words(fanned...)+" | to-csv")
			check("--workers 4", []byte(r.stdout), r.stderr, r.code)
			if left := (fanOutTarget{jobs: jobs}).left(t); len(left) != 0 {
				t.Fatalf("objects left: %q", left)
			}
		})
	}
}

// TestExecFailuresEndTheRun: a program that fails, hangs past --timeout,
// writes garbage, stops its Arrow stream short, or reads nothing and
// writes much ends the run (fused, and in the map tasks of --workers)
// with one line naming it and exit 1, and leaves nothing in the job
// store.
func TestExecFailuresEndTheRun(t *testing.T) {
	dir := pipeData(t)
	src := "scan " + filepath.Join(dir, "lineitem") + " --columns l_orderkey,l_comment"
	for _, c := range []struct {
		name string
		exec []string
		says string
	}{
		{"exit 3", []string{"exec", "--", "sh", "-c", "echo it went wrong >&2; exit 3"}, "exec sh: exit status 3; stderr: it went wrong"},
		{"hang", []string{"exec", "--timeout", "1s", "--", "sleep", "600"}, "exec sleep: killed: it ran past --timeout 1s"},
		{"garbage", []string{"exec", "--", "sh", "-c", "echo this is not arrow"}, "exec sh: output: not an Arrow IPC stream"},
		{"exits early", []string{"exec", "--", "head", "-c", "300"}, "exec head: output: "},
		{"reads nothing writes much", []string{"exec", "--", "yes", "no input"}, "exec yes: output: not an Arrow IPC stream"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := sluice(t, execEnv(), "run", src+" | "+words(c.exec...)+" | to-csv")
			assertCleanFailure(t, withoutProgramLog(r), exitError, c.says)
			jobs := filepath.Join(t.TempDir(), "jobs") + "/"
			r = sluice(t, execEnv(), "run", "--workers", "4", "--attempts", "1", "--store", jobs, src+" | "+words(c.exec...)+" | to-csv")
			assertCleanFailure(t, r, exitError, c.says)
			if left := (fanOutTarget{jobs: jobs}).left(t); len(left) != 0 {
				t.Fatalf("objects left: %q", left)
			}
			// As a command of its own, over a stream on stdin.
			out, stderr, code := runCmd(t, "", execEnv(), "bash", "-c",
				"sluice run "+shellQuote(src+" | head 5000")+" > in.arrows && sluice "+words(c.exec...)+" < in.arrows > /dev/null; e=$?; rm in.arrows; exit $e")
			assertCleanFailure(t, withoutProgramLog(result{string(out), stderr, code}), exitError, c.says)
		})
	}
}

// withoutProgramLog is r without the program's stderr passed on ([exec
// NAME] lines): what is left is sluice's own.
func withoutProgramLog(r result) result {
	var keep []string
	for _, line := range strings.SplitAfter(r.stderr, "\n") {
		if !strings.HasPrefix(line, "[exec ") {
			keep = append(keep, line)
		}
	}
	r.stderr = strings.Join(keep, "")
	return r
}

// TestExecBadInput: how an exec stage is written is checked before
// anything runs: exit 2, one line, nothing written.
func TestExecBadInput(t *testing.T) {
	data := pipeData(t)
	src := "scan " + filepath.Join(data, "lineitem") + " | "
	dir := t.TempDir()
	out := filepath.Join(dir, "out.parquet")
	assertBadInputs(t, execEnv(), dir, []badInput{
		{"no program", []string{"run", src + "exec | write " + out}, exitUsage, "exec: no program given"},
		{"no program, as a command", []string{"exec"}, exitUsage, "exec: no program given"},
		{"unknown --in", []string{"run", src + "exec --in xml -- cat | write " + out}, exitUsage, `exec --in "xml": want arrows, csv, jsonl`},
		{"unknown --out", []string{"run", src + "exec --out parquet -- cat | write " + out}, exitUsage, `exec --out "parquet"`},
		{"bad --schema", []string{"run", src + "exec --schema a=int -- cat | write " + out}, exitUsage, "exec --schema a=int"},
		{"missing program", []string{"run", src + "exec -- sluice-no-such-program | write " + out}, exitUsage, `program "sluice-no-such-program" not found`},
		{"missing program, fanned out", []string{"run", "--workers", "2", "--attempts", "1", "--store", filepath.Join(t.TempDir(), "jobs"), src + "exec -- sluice-no-such-program | write " + out}, exitError, `program "sluice-no-such-program" not found`},
		// No retry can find the program: the job fails at the first attempt.
		{"missing program, not retried", []string{"run", "--workers", "2", "--store", filepath.Join(t.TempDir(), "jobs"), src + "exec -- sluice-no-such-program | write " + out}, exitError, `failed 1 time(s)`},
	})
}

// TestExecSideEffects: under --workers with every task started twice
// (--x-duplicate-all), a program runs twice on a piece; marked
// --side-effects, once.
func TestExecSideEffects(t *testing.T) {
	dir := pipeData(t)
	src := "scan " + filepath.Join(dir, "lineitem") + " --columns l_orderkey"
	for _, c := range []struct {
		flags []string
		runs  int
	}{{nil, 2}, {[]string{"--side-effects"}, 1}} {
		log := filepath.Join(t.TempDir(), "runs")
		stage := append(append([]string{"exec"}, c.flags...), "--", "sh", "-c", `echo "$SLUICE_PHASE $SLUICE_TASK_INDEX $SLUICE_PIECE" >> `+log+`; cat`)
		jobs := filepath.Join(t.TempDir(), "jobs") + "/"
		r := sluice(t, execEnv(), "run", "--workers", "3", "--store", jobs, "--x-duplicate-all", src+" | "+words(stage...)+" | count-by l_orderkey | head 1 | to-csv")
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", c.flags, r.code, r.stderr)
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		runs := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			runs[line]++
		}
		if len(runs) != 3 {
			t.Fatalf("%v: the programs ran as %q, want 3 map tasks", c.flags, b)
		}
		most := 0
		for piece, n := range runs {
			if !strings.HasPrefix(piece, "map ") || !strings.Contains(piece, ".parquet:0-") {
				t.Errorf("%v: the program was told %q", c.flags, piece)
			}
			most = max(most, n)
		}
		// Without the mark the first task's two attempts start at once;
		// a later duplicate may find its task committed and not start.
		if most != c.runs {
			t.Errorf("%v: a piece ran %d times at most, want %d: %q", c.flags, most, c.runs, b)
		}
	}
}

// TestExecHelp: exec's help says what order means after a program, that
// under --workers it may run more than once, how to mark side effects and
// where the program must be.
func TestExecHelp(t *testing.T) {
	r := sluice(t, nil, "exec", "--help")
	for _, want := range []string{"Order:", "as the program wrote them", "more than once", "--side-effects", "--image", "PATH", "Examples:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("exec --help does not say %q", want)
		}
	}
}

// TestExecInReducers: a program between a shuffle and its aggregation
// runs in each reducer, over its part (told SLUICE_PHASE=reduce), with
// the results of sluice's own stage.
func TestExecInReducers(t *testing.T) {
	dir := pipeData(t)
	src := "scan " + filepath.Join(dir, "lineitem") + " --columns l_orderkey,l_quantity | shuffle --by l_orderkey --to 3 | "
	after := " | sum-by l_orderkey l_quantity | top 20 --by l_quantity,l_orderkey --desc | to-csv"
	want := sluice(t, execEnv(), "run", src+"filter 'l_quantity > 25'"+after)
	if want.code != 0 || strings.Count(want.stdout, "\n") != 21 {
		t.Fatalf("own stages: exit %d: %s%s", want.code, want.stdout, want.stderr)
	}
	log := filepath.Join(t.TempDir(), "runs")
	stage := words("exec", "--", "sh", "-c", `echo "$SLUICE_PHASE $SLUICE_PIECE" >> `+log+`; exec sluice filter 'l_quantity > 25'`)
	jobs := filepath.Join(t.TempDir(), "jobs") + "/"
	r := sluice(t, execEnv(), "run", "--workers", "4", "--store", jobs, src+stage+after)
	if r.code != 0 || r.stdout != want.stdout {
		t.Fatalf("exit %d: %q, want %q: %s", r.code, r.stdout, want.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(log); !strings.Contains(string(b), "reduce part 0") || !strings.Contains(string(b), "reduce part 2") || strings.Contains(string(b), "map") {
		t.Fatalf("the programs ran as %q", b)
	}
	if left := (fanOutTarget{jobs: jobs}).left(t); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
}

// TestExecSluiceHandsOff: when the program is this sluice, batches go
// through shared memory both ways, every time: each way carries more
// than a pipe's buffer (1 MiB), so the writer waits for its reader to
// read, and the reader, once it has read, connects before the writer's
// next batch. With SLUICE_PIPE=plain they go through the pipes, with
// the same result.
func TestExecSluiceHandsOff(t *testing.T) {
	dir := pipeData(t)
	q := "scan " + filepath.Join(dir, "lineitem") + " --columns l_orderkey,l_partkey,l_suppkey,l_quantity,l_extendedprice,l_discount,l_tax" +
		" | exec -- sluice filter 'l_quantity > 4' | count-by l_quantity | to-csv"
	var first string
	for i := range 3 {
		r := sluice(t, append(execEnv(), "SLUICE_PIPE_TRACE=1"), "run", q)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		for _, want := range []string{"[exec sluice] sluice: pipe: filter: read its input through shared memory", "sluice: pipe: run: read a program's output through shared memory"} {
			if !strings.Contains(r.stderr, want) {
				t.Fatalf("run %d: stderr %q does not say %q", i, r.stderr, want)
			}
		}
		first = r.stdout
	}
	r := sluice(t, append(execEnv(), "SLUICE_PIPE_TRACE=1", "SLUICE_PIPE=plain"), "run", q)
	if r.code != 0 || r.stdout != first || strings.Contains(r.stderr, "shared memory") {
		t.Fatalf("plain: exit %d, %q (want %q): %s", r.code, r.stdout, first, r.stderr)
	}
}
