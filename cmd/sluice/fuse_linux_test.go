package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/pflag"
)

// traceLines are the lines of SLUICE_PIPE_TRACE in stderr that say what.
func traceLines(stderr, what string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "sluice: pipe: ") && strings.Contains(l, what) {
			out = append(out, strings.TrimPrefix(l, "sluice: pipe: "))
		}
	}
	return out
}

// TestPipedStagesFuse: a shell pipeline of sluice stages runs in its last
// process, as sluice run would, and gives sluice run's bytes; with
// SLUICE_PIPE=handoff nothing fuses and the bytes are the same.
func TestPipedStagesFuse(t *testing.T) {
	dir := pipeData(t)
	li := filepath.Join(dir, "lineitem")
	stages := []string{
		"scan " + li + " --dict l_returnflag,l_linestatus --columns l_returnflag,l_linestatus,l_quantity,l_extendedprice,l_discount,l_tax,l_shipdate",
		`filter "l_shipdate <= date '1998-09-02'"`,
		"agg-by l_returnflag,l_linestatus " + queryBAggs,
		"show --rows 3",
	}
	fr := sluice(t, nil, "run", strings.Join(stages, " | "))
	if fr.code != 0 {
		t.Fatalf("run: %s", fr.stderr)
	}
	script := "sluice run " + shellQuote(stages[0]) + " | sluice " + strings.Join(stages[1:], " | sluice ")
	out, stderr, code := bashEnv(t, []string{"SLUICE_PIPE_TRACE=1"}, script)
	if code != 0 || string(out) != fr.stdout {
		t.Fatalf("piped: exit %d, %q, want %q: %s", code, out, fr.stdout, stderr)
	}
	want := []string{
		"filter: runs scan | filter",
		"agg-by: runs scan | filter | agg-by",
		"show: runs scan | filter | agg-by | show",
		"run: runs fused in the stage after it",
		"filter: runs fused in the stage after it",
		"agg-by: runs fused in the stage after it",
	}
	for _, w := range want {
		if len(traceLines(stderr, w)) != 1 {
			t.Errorf("no %q in the trace:\n%s", w, stderr)
		}
	}
	out, stderr, code = bashEnv(t, []string{"SLUICE_PIPE_TRACE=1", "SLUICE_PIPE=handoff"}, script)
	if code != 0 || string(out) != fr.stdout {
		t.Fatalf("SLUICE_PIPE=handoff: exit %d, %q, want %q: %s", code, out, fr.stdout, stderr)
	}
	if l := traceLines(stderr, "runs"); len(l) != 0 {
		t.Errorf("SLUICE_PIPE=handoff fused: %q", l)
	}
}

// TestPipedStagesNotFused: stages that differ in what they run with, or a
// reader that comes after the writer has started, are not fused, and the
// results are the same.
func TestPipedStagesNotFused(t *testing.T) {
	dir := pipeData(t)
	scan := shellQuote("scan " + filepath.Join(dir, "taxi") + " --columns pickup_date,trip_distance")
	fr := sluice(t, nil, "run", "scan "+filepath.Join(dir, "taxi")+" --columns pickup_date,trip_distance | sum-by pickup_date trip_distance | to-csv")
	if fr.code != 0 {
		t.Fatalf("run: %s", fr.stderr)
	}
	arrowFile := filepath.Join(dir, "taxi.arrows")
	if _, stderr, code := bash(t, "sluice run "+scan+" > "+arrowFile); code != 0 {
		t.Fatalf("stream to a file: %s", stderr)
	}
	const differ = "the stages differ"
	cases := []struct{ name, script, why string }{
		{"environment", "sluice run " + scan + " | env SLUICE_OTHER=1 sluice sum-by pickup_date trip_distance | sluice to-csv", differ},
		{"global flags", "sluice run " + scan + " | sluice --region eu-west-1 sum-by pickup_date trip_distance | sluice to-csv", differ},
		{"standard error", "sluice run " + scan + " 2>/dev/null | sluice sum-by pickup_date trip_distance | sluice to-csv", differ},
		// sum-by declines, or has written before to-csv asks.
		{"input not a scan", "cat " + arrowFile + " | sluice sum-by pickup_date trip_distance | sluice to-csv", ""},
		// The writer waits fuseWait at most, then runs and writes: a
		// reader that asks later is too late (or finds the writer gone).
		{"late reader", "sluice run " + scan + " | { sleep 1; sluice sum-by pickup_date trip_distance; } | sluice to-csv", ""},
	}
	// A stage that does not fuse still hands its batches over through
	// shared memory: its reader learns at once that it is to read the pipe,
	// and listens for the hand-off before the first batch (the link model
	// holds that back until both have started).
	slow := shellQuote("scan " + filepath.Join(dir, "taxi") + " --columns pickup_date,trip_distance --sim ttfb=100ms")
	out, stderr, code := bashEnv(t, []string{"SLUICE_PIPE_TRACE=1"}, "sluice run --threads 2 "+slow+" | sluice sum-by pickup_date trip_distance | sluice to-csv")
	if code != 0 || string(out) != fr.stdout || !strings.Contains(stderr, "sum-by: not fused with the stage before it: it runs with its own --threads") ||
		!strings.Contains(stderr, "sum-by: read its input through shared memory") {
		t.Errorf("run --threads 2: exit %d, %d bytes, want %d: %s", code, len(out), len(fr.stdout), stderr)
	}
	// A stage whose reader is another program does not wait for it to ask.
	out, stderr, code = bashEnv(t, []string{"SLUICE_PIPE_TRACE=1"}, "sluice run "+scan+" | cat | sluice sum-by pickup_date trip_distance | sluice to-csv")
	if code != 0 || string(out) != fr.stdout || len(traceLines(stderr, "run: its reader is no sluice stage: runs at once")) != 1 {
		t.Errorf("reader cat: exit %d, %d bytes, want %d: %s", code, len(out), len(fr.stdout), stderr)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, stderr, code := bashEnv(t, []string{"SLUICE_PIPE_TRACE=1"}, c.script)
			if code != 0 || string(out) != fr.stdout {
				t.Fatalf("exit %d, %d bytes, want %d: %s", code, len(out), len(fr.stdout), stderr)
			}
			if l := traceLines(stderr, "runs scan"); len(l) != 0 {
				t.Errorf("fused: %q", l)
			}
			if c.why != "" && len(traceLines(stderr, "not fused with the stage before it: "+c.why)) == 0 {
				t.Errorf("the trace does not say %q:\n%s", c.why, stderr)
			}
		})
	}
}

// TestPipedFusedErrors: an error in any fused stage is told once, and
// every process of the pipeline exits with its code.
func TestPipedFusedErrors(t *testing.T) {
	dir := pipeData(t)
	scan := shellQuote("scan " + filepath.Join(dir, "taxi"))
	cases := []struct {
		name, script string
		code         int
		mention      string
	}{
		{"missing data", "sluice run 'scan " + filepath.Join(dir, "nothing") + "' | sluice filter 'x > 1' | sluice show", exitNotFound, "no parquet files"},
		{"bad column", "sluice run " + scan + " | sluice filter 'nosuch > 1' | sluice show", exitUsage, `no column "nosuch"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, _ := bash(t, c.script+`; echo "${PIPESTATUS[*]}" >&2`)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "sluice: ") || !strings.Contains(lines[0], c.mention) {
				t.Fatalf("want one line mentioning %q, then the exit codes: %q", c.mention, stderr)
			}
			if want := strings.TrimSpace(strings.Repeat(" "+string(rune('0'+c.code)), 3)); lines[1] != want {
				t.Errorf("exit codes %q, want %q", lines[1], want)
			}
		})
	}
}

// TestStageWords: a stage command's flags and arguments, made into words,
// parse back to the same values.
func TestStageWords(t *testing.T) {
	for _, args := range [][]string{
		{"top", "9", "--by", "trip_distance,fare_amount:asc", "--desc"},
		{"filter", "--", "-x < 3 and name = 'a b'"},
		{"sort", "--by", "a", "--memory", "1MiB"},
		{"show", "--rows", "7"},
		{"agg-by", "k", "sum(x), count()"},
		{"from-csv", "--types", "a=int64,b=string", "--types", "c=date32", "x.csv"},
	} {
		d := stageDefByName(args[0])
		cmd, _ := newStageCommand(d)
		if err := cmd.ParseFlags(args[1:]); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		words, ok := stageWords(cmd, cmd.Flags().Args())
		if !ok || words[0] != args[0] {
			t.Fatalf("%q: words %q", args, words)
		}
		again, _ := newStageCommand(d)
		if err := again.ParseFlags(words[1:]); err != nil {
			t.Fatalf("%q: words %q: %v", args, words, err)
		}
		if !reflect.DeepEqual(again.Flags().Args(), cmd.Flags().Args()) {
			t.Errorf("%q: arguments %q, want %q", args, again.Flags().Args(), cmd.Flags().Args())
		}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if g := again.Flags().Lookup(f.Name); g.Value.String() != f.Value.String() || g.Changed != f.Changed {
				t.Errorf("%q: --%s %q (set %v), want %q (set %v)", args, f.Name, g.Value, g.Changed, f.Value, f.Changed)
			}
		})
	}
	cmd, _ := newStageCommand(stageDefByName("show"))
	cmd.Flags().String("cpuprofile", "", "as stage commands have")
	if err := cmd.ParseFlags([]string{"--cpuprofile", "x"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := stageWords(cmd, nil); ok {
		t.Error("a stage that profiles itself gave its words")
	}
}

// FuzzFuseAnswer: a writer's answer, whatever its bytes, decodes to a plan
// that is fusable or not, without a panic.
func FuzzFuseAnswer(f *testing.F) {
	for _, a := range []fuseAnswer{
		{Plan: &fusePlan{Stages: [][]string{{"scan", "x"}, {"filter", "a > 1"}}}},
		{Why: "no"},
		{Plan: &fusePlan{Stages: [][]string{{}}}},
		{Plan: &fusePlan{Stages: [][]string{{"scan"}, {"write", "x"}}}},
	} {
		b, _ := json.Marshal(a)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var a fuseAnswer
		if json.Unmarshal(b, &a) != nil {
			return
		}
		if why := a.Plan.unfusable(); why == "" {
			p := a.Plan.with([]string{"filter", "x"})
			if p.unfusable() != "" || !strings.HasPrefix(stagesText(p.Stages), "scan") {
				t.Fatalf("%q: fusable, and with a stage after it not", b)
			}
		} else if !bytes.Contains([]byte(why), []byte(" ")) {
			t.Fatalf("%q: reason %q", b, why)
		}
	})
}

// startFused starts `sluice run SCAN | sluice head | sluice to-csv` in a
// process group of its own, its exit codes printed last on stderr, and
// waits until the three have fused.
func startFused(t *testing.T, scan string) (*osexec.Cmd, *lockedBuffer) {
	t.Helper()
	cmd := osexec.Command("bash", "-c", "sluice run "+scan+" | sluice head 100000000 | sluice to-csv > /dev/null; echo codes ${PIPESTATUS[*]} >&2")
	cmd.Env = append(os.Environ(), "SLUICE_PIPE_TRACE=1", "PATH="+filepath.Dir(sluiceBin)+":"+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the stages to fuse", func() bool {
		return strings.Contains(string(stderr.Bytes()), "to-csv: runs scan | head | to-csv")
	})
	return cmd, stderr
}

// TestPipedFusedInterrupted: Ctrl-C (SIGINT to the whole pipeline) stops
// fused stages; every process exits 130 and only the one running them
// all says so.
func TestPipedFusedInterrupted(t *testing.T) {
	dir := pipeData(t)
	scan := shellQuote("scan " + filepath.Join(dir, "lineitem") + " --sim ttfb=5ms,stream=100KiB/s,link=200KiB/s --batch-rows 500")
	cmd, stderr := startFused(t, scan)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, string(stderr.Bytes()))
	}
	got := string(stderr.Bytes())
	if !strings.Contains(got, "codes 130 130 130") || strings.Count(got, "sluice: interrupted") != 1 {
		t.Errorf("want exit codes 130 130 130 and one \"interrupted\":\n%s", got)
	}
}

// TestScanWords: sluice scan -o -'s words as run's scan stage drop the
// flags of its own output, keep its default budget, and parse as the
// stage's flags.
func TestScanWords(t *testing.T) {
	cmd := newScanCommand()
	if err := cmd.ParseFlags([]string{"-o", "-", "-q", "--columns", "a,b", "--compression", "zstd", "--stats", "s3://b/x/"}); err != nil {
		t.Fatal(err)
	}
	var opts scanFlags
	words := scanWords(cmd, "s3://b/x/", opts)
	want := []string{"scan", "--memory=536870912", "--columns=a,b", "--stats=true", "--", "s3://b/x/"}
	if !reflect.DeepEqual(words, want) {
		t.Fatalf("words %q, want %q", words, want)
	}
	stage, _ := newStageCommand(stageDefByName("scan"))
	if err := stage.ParseFlags(words[1:]); err != nil || !reflect.DeepEqual(stage.Flags().Args(), []string{"s3://b/x/"}) {
		t.Fatalf("as the scan stage: %v, arguments %q", err, stage.Flags().Args())
	}
}

// TestPipedFusedStopped: a stage before the one running them all that is
// stopped (SIGTERM as timeout sends, kill -9) stops the run, which fails,
// as the stages apart would.
func TestPipedFusedStopped(t *testing.T) {
	dir := pipeData(t)
	scan := shellQuote("scan " + filepath.Join(dir, "lineitem") + " --sim ttfb=5ms,stream=100KiB/s,link=200KiB/s --batch-rows 500")
	for _, c := range []struct {
		stop  string
		sig   syscall.Signal
		codes string
	}{
		{"run", syscall.SIGTERM, "codes 130 1 1"},
		{"head", syscall.SIGKILL, "codes 0 137 1"},
	} {
		cmd, out := startFused(t, scan)
		pid := 0
		lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", cmd.Process.Pid))
		for _, l := range lists {
			b, _ := os.ReadFile(l)
			for _, p := range strings.Fields(string(b)) {
				if line, _ := os.ReadFile("/proc/" + p + "/cmdline"); strings.Contains(string(line), "\x00"+c.stop+"\x00") {
					pid, _ = strconv.Atoi(p)
				}
			}
		}
		if pid == 0 {
			t.Fatalf("no %s process", c.stop)
		}
		if err := syscall.Kill(pid, c.sig); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%v: %s", err, out.Bytes())
		}
		if got := string(out.Bytes()); !strings.Contains(got, c.codes) || !strings.Contains(got, "a stage before this one was stopped") {
			t.Errorf("%s of %s: want %q and the stop told: %s", c.sig, c.stop, c.codes, got)
		}
	}
}

// TestPipedLateReaderAfterWork: a stage that has started its run (a sort
// that has read all its input) does not give its stages to a reader that
// asks later: nothing is done twice.
func TestPipedLateReaderAfterWork(t *testing.T) {
	dir := pipeData(t)
	scan := shellQuote("scan " + filepath.Join(dir, "taxi") + " --columns trip_distance --stats")
	out, stderr, code := bashEnv(t, []string{"SLUICE_PIPE_TRACE=1"}, "sluice run "+scan+" | sluice sort --by trip_distance | { sleep 0.5; sluice head 3; } | sluice to-csv")
	if code != 0 || strings.Count(string(out), "\n") != 4 {
		t.Fatalf("exit %d, %q: %s", code, out, stderr)
	}
	if n := strings.Count(stderr, "scan: 40000 rows"); n != 1 || !strings.Contains(stderr, "sort: runs scan | sort") {
		t.Errorf("the scan ran %d times, want once, in sort: %s", n, stderr)
	}
}

// TestAsksForPlan: which readers a stage that could be fused waits for.
func TestAsksForPlan(t *testing.T) {
	for _, c := range []struct {
		args, env []string
		want      bool
	}{
		{[]string{"sluice", "filter", "x > 1"}, nil, true},
		{[]string{"sluice", "--sim", "s3", "show"}, []string{"HOME=/root"}, true},
		{[]string{"sluice", "show"}, []string{"SLUICE_PIPE=handoff"}, false},
		{[]string{"sluice", "filter", "--cpuprofile", "f.prof", "x > 1"}, nil, false},
		{[]string{"sluice", "cp", "-", "s3://b/x"}, nil, false},
		{[]string{"sluice", "run", "scan x | show"}, nil, false},
		{[]string{"sluice", "merge", "--by", "k", "x/"}, nil, false},
		{[]string{"sluice", "cp", "-", "sort"}, nil, false},
		{[]string{"sluice", "--endpoint", "show", "filter", "x > 1"}, nil, true},
		{[]string{"show"}, nil, false},
		{nil, nil, false},
	} {
		if got := asksForPlan(c.args, c.env); got != c.want {
			t.Errorf("%q %q: %v, want %v", c.args, c.env, got, c.want)
		}
	}
}
