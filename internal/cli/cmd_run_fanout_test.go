package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-data/sluice/internal/await"
	"github.com/sluice-data/sluice/internal/fanouthook"
	"github.com/sluice-data/sluice/internal/s3test"
	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/store/storetest"
)

// The queries of bench/pipeline (A and B) and a shuffle, as sluice run
// takes them; {taxi} and {lineitem} are the datasets' URLs.
var fanOutQueries = map[string]string{
	"A": "scan {taxi} --columns pickup_date,trip_distance | sum-by pickup_date trip_distance | top 9 --by trip_distance --desc",
	"B": `scan {lineitem} --dict l_returnflag,l_linestatus --columns l_returnflag,l_linestatus,l_quantity,l_extendedprice,l_discount,l_tax,l_shipdate` +
		` | filter "l_shipdate <= date '1998-09-02'"` +
		` | agg-by l_returnflag,l_linestatus 'sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price, ` +
		`sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, ` +
		`mean(l_quantity) as avg_qty, mean(l_extendedprice) as avg_price, mean(l_discount) as avg_disc, count() as count_order'`,
	"shuffle": "scan {lineitem} | shuffle --by l_orderkey --to 8 | sum-by l_orderkey l_quantity,l_extendedprice | top 10 --by l_quantity --desc",
	// reducers sort their parts, the driver merges them: ties (few flags,
	// few dates) in dataset order
	"sort": "scan {lineitem} --columns l_orderkey,l_returnflag,l_shipdate,l_quantity | shuffle --by l_orderkey --to 4" +
		" | filter 'l_quantity > 5' | sort --by l_returnflag,l_shipdate:desc",
	// every row of a wide projection reaches the driver, streamed
	"rows": "scan {lineitem} --columns l_orderkey,l_partkey,l_comment,l_shipdate,l_extendedprice | filter 'l_extendedprice > 0'",
	// one row of the whole input; its pieces with no row after the
	// filter send empty summaries
	"agg": "scan {lineitem} | filter 'l_orderkey < 3000' | agg 'sum(l_extendedprice * (1 - l_discount)) as revenue, count() as n, median(l_quantity), count(distinct l_partkey)'",
	// joins: in the map tasks (the right side broadcast, or read by each
	// task), and at the driver (right and full)
	"join":  "scan {lineitem} --columns l_orderkey,l_linenumber,l_returnflag | join (scan {lineitem} --filter 'l_quantity > 45' | count-by l_orderkey) --on l_orderkey --how left",
	"semi":  "scan {lineitem} --columns l_orderkey,l_partkey | join (scan {lineitem} --filter 'l_discount = 0.1' | select l_orderkey) --on l_orderkey --how semi",
	"right": "scan {lineitem} --columns l_orderkey,l_linenumber | filter 'l_linenumber = 7' | join (scan {lineitem} --columns l_orderkey,l_shipmode | filter \"l_shipmode = 'AIR'\") --on l_orderkey --how right --prefix r_",
}

// fanOutTarget is where the datasets and the jobs live: local
// directories, or a bucket of the MinIO that ./scripts/test starts.
type fanOutTarget struct {
	env            []string
	taxi, lineitem string
	jobs           string // --store
	openOpts       store.Options
}

func (tg fanOutTarget) query(name string) string {
	return strings.NewReplacer("{taxi}", tg.taxi, "{lineitem}", tg.lineitem).Replace(fanOutQueries[name])
}

// left lists the objects under the jobs URL.
func (tg fanOutTarget) left(t *testing.T) []string {
	t.Helper()
	var keys []string
	for _, in := range tg.objects(t) {
		keys = append(keys, in.Key)
	}
	return keys
}

// objects are the objects under the jobs URL, keys relative to it.
func (tg fanOutTarget) objects(t *testing.T) []store.ObjectInfo {
	t.Helper()
	return storetest.List(t, tg.jobs, tg.openOpts)
}

func localTarget(t *testing.T) fanOutTarget {
	dir := pipeData(t)
	return fanOutTarget{taxi: filepath.Join(dir, "taxi"), lineitem: filepath.Join(dir, "lineitem"), jobs: filepath.Join(t.TempDir(), "jobs") + "/"}
}

// minioBase is a fresh prefix of a bucket on the MinIO of ./scripts/test
// (skipped without it, failing under CI), with the environment that
// reaches it.
func minioBase(t *testing.T) (env []string, base string, opts store.Options) {
	endpoint, bucket := s3test.Bucket(t)
	var b [6]byte
	rand.Read(b[:])
	base = "s3://" + bucket + "/fanout-" + hex.EncodeToString(b[:]) + "/"
	return []string{"AWS_ENDPOINT_URL=" + endpoint, "AWS_REGION=us-east-1"}, base, store.Options{Endpoint: endpoint}
}

// minioTarget copies the datasets into a fresh prefix on MinIO.
func minioTarget(t *testing.T) fanOutTarget {
	env, base, opts := minioBase(t)
	dir := pipeData(t)
	for _, ds := range []string{"taxi", "lineitem"} {
		if r := sluice(t, env, "cp", filepath.Join(dir, ds)+"/", base+ds+"/"); r.code != 0 {
			t.Fatalf("cp: %s", r.stderr)
		}
	}
	return fanOutTarget{env: env, taxi: base + "taxi/", lineitem: base + "lineitem/", jobs: base + "jobs/", openOpts: opts}
}

// runBoth runs a query in one process and with --workers 4 (and extra
// flags), each into an Arrow IPC stream file, and fails unless the two
// files are the same bytes; it returns the fanned-out run's stderr.
func runBoth(t *testing.T, tg fanOutTarget, name string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	one, many := filepath.Join(dir, "one.arrows"), filepath.Join(dir, "many.arrows")
	q := tg.query(name)
	if r := sluice(t, tg.env, "run", q+" | write "+one); r.code != 0 {
		t.Fatalf("%s in one process: %s", name, r.stderr)
	}
	args := append([]string{"run", "--workers", "4", "--store", tg.jobs, "-v"}, extra...)
	r := sluice(t, tg.env, append(args, q+" | write "+many)...)
	if r.code != 0 {
		t.Fatalf("%s with --workers 4: exit %d: %s", name, r.code, r.stderr)
	}
	a, errA := os.ReadFile(one)
	b, errB := os.ReadFile(many)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if len(a) < 200 || !bytes.Equal(a, b) {
		t.Fatalf("%s: %d bytes fanned out, %d in one process, not the same bytes", name, len(b), len(a))
	}
	return r.stderr
}

// TestRunFanOutMatchesOneProcess: queries A, B and a shuffle give the
// same Arrow stream, byte for byte, in one process and over 4 workers
// (map tasks of row group ranges), and the job leaves no object behind.
func TestRunFanOutMatchesOneProcess(t *testing.T) {
	for _, where := range []string{"file", "minio"} {
		t.Run(where, func(t *testing.T) {
			tg := map[string]func(*testing.T) fanOutTarget{"file": localTarget, "minio": minioTarget}[where](t)
			for _, q := range []string{"A", "B", "shuffle", "sort", "rows", "agg"} {
				stderr := runBoth(t, tg, q, "--piece-size", "128KiB")
				if !strings.Contains(stderr, "phase 0 (map)") {
					t.Errorf("%s: no map phase in the log: %s", q, stderr)
				}
				if left := tg.left(t); len(left) != 0 {
					t.Fatalf("%s: objects left under %s: %q", q, tg.jobs, left)
				}
			}
		})
	}
}

// TestRunFanOutJoins: joins give one process's bytes over 4 workers,
// with the right side broadcast (written once by the driver), read by
// each map task (an aggregation's, past --broadcast), or run at the
// driver (a right join); and one process's rows with both sides shuffled
// and joined by reducers (--join partitioned, and auto for a right join
// or past --broadcast), whose merged batches are cut otherwise. Nothing
// is left in the job's store.
func TestRunFanOutJoins(t *testing.T) {
	for _, where := range []string{"file", "minio"} {
		t.Run(where, func(t *testing.T) {
			tg := map[string]func(*testing.T) fanOutTarget{"file": localTarget, "minio": minioTarget}[where](t)
			for _, c := range []struct {
				q, how      string
				extra       []string
				partitioned bool
			}{
				{"join", "broadcast", []string{"--broadcast", "256MiB"}, false},
				{"join", "read by each task", []string{"--broadcast", "0"}, false}, // an aggregation: not partitioned
				{"semi", "broadcast", []string{"--join", "broadcast", "--broadcast", "0"}, false},
				{"semi", "auto past --broadcast", []string{"--broadcast", "0"}, true},
				{"semi", "partitioned", []string{"--join", "partitioned"}, true},
				{"right", "at the driver", []string{"--join", "broadcast"}, false},
				{"right", "auto", nil, true},
			} {
				args := append([]string{"--piece-size", "128KiB"}, c.extra...)
				var stderr string
				if c.partitioned {
					stderr = runBothRows(t, tg, c.q, args...)
				} else {
					stderr = runBoth(t, tg, c.q, args...)
				}
				broadcast := strings.Contains(stderr, "the right side broadcast")
				partitioned := strings.Contains(stderr, "read a part of every map object of both sides | join")
				if want := c.how == "broadcast"; broadcast != want || partitioned != c.partitioned {
					t.Errorf("%s %s: broadcast %v, partitioned %v: %s", c.q, c.how, broadcast, partitioned, stderr)
				}
				if left := tg.left(t); len(left) != 0 {
					t.Fatalf("%s: objects left under %s: %q", c.q, tg.jobs, left)
				}
			}
		})
	}
}

// runBothRows is runBoth for rows: CSV text in one process and over 4
// workers, the same text.
func runBothRows(t *testing.T, tg fanOutTarget, name string, extra ...string) string {
	t.Helper()
	q := tg.query(name) + " | to-csv"
	one := sluice(t, tg.env, "run", q)
	if one.code != 0 {
		t.Fatalf("%s in one process: %s", name, one.stderr)
	}
	args := append([]string{"run", "--workers", "4", "--store", tg.jobs, "-v"}, extra...)
	many := sluice(t, tg.env, append(args, q)...)
	if many.code != 0 {
		t.Fatalf("%s with --workers 4: exit %d: %s", name, many.code, many.stderr)
	}
	if strings.Count(one.stdout, "\n") < 10 || many.stdout != one.stdout {
		t.Fatalf("%s: %d bytes of CSV fanned out, %d in one process, not the same", name, len(many.stdout), len(one.stdout))
	}
	return many.stderr
}

// TestRunFanOutShuffleObjects: a shuffle of 16 map tasks into 16 parts
// writes 16 map objects (not 16 x 16), kept with --keep beside the
// reducers' 16 outputs and small manifests, and nothing else.
func TestRunFanOutShuffleObjects(t *testing.T) {
	for _, where := range []string{"file", "minio"} {
		t.Run(where, func(t *testing.T) {
			var tg fanOutTarget
			li := filepath.Join(t.TempDir(), "lineitem")
			if where == "file" {
				tg.jobs = filepath.Join(t.TempDir(), "jobs") + "/"
			} else {
				env, base, opts := minioBase(t)
				tg = fanOutTarget{env: env, jobs: base + "jobs/", openOpts: opts}
				li = base + "lineitem/"
			}
			if r := sluice(t, tg.env, "gen", "lineitem", "--rows", "32000", "--files", "16", "--out", li, "-q"); r.code != 0 {
				t.Fatalf("gen: %s", r.stderr)
			}
			q := "scan " + li + " | shuffle --by l_orderkey --to 16 | sum-by l_orderkey l_quantity | top 10 --by l_quantity --desc | show"
			r := sluice(t, tg.env, "run", "--workers", "4", "--store", tg.jobs, "--keep", q)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			one := sluice(t, tg.env, "run", q)
			if one.stdout != r.stdout || !strings.Contains(r.stdout, "(10 rows)") {
				t.Fatalf("kept run:\n%s\none process:\n%s", r.stdout, one.stdout)
			}
			count := map[string]int{}
			var small int
			dirs := map[string]bool{}
			for _, o := range tg.objects(t) {
				switch k := o.Key; {
				case strings.HasSuffix(k, ".shuffle"):
					count["map objects"]++
					dirs[path.Dir(k)] = true
				case strings.HasSuffix(k, ".arrows"):
					count["reducer outputs"]++
				case strings.HasSuffix(k, "/manifest.json"), strings.HasSuffix(k, "/job.json"), strings.HasSuffix(k, "/job.sig"):
					if o.Size > 64<<10 {
						t.Errorf("%s: %d bytes", k, o.Size)
					}
					small++
				default:
					t.Errorf("unexpected object %s", k)
				}
			}
			if count["map objects"] != 16 || count["reducer outputs"] != 16 || small != 4 {
				t.Fatalf("%v and %d manifests and specs: want 16 map objects, 16 reducer outputs, 2 manifests, the spec and its signature", count, small)
			}
			if len(dirs) != 16 {
				t.Fatalf("the 16 map objects are under %d prefixes, want one each: %v", len(dirs), dirs)
			}
		})
	}
}

// TestRunFanOutDuplicateAttempts: with two attempts of every task at
// once, results are those of one process (a row counted twice would
// change the sums and counts) and no loser's object is left.
func TestRunFanOutDuplicateAttempts(t *testing.T) {
	tg := localTarget(t)
	for _, q := range []string{"B", "shuffle"} {
		runBoth(t, tg, q, "--x-duplicate-all")
		if left := tg.left(t); len(left) != 0 {
			t.Fatalf("%s: objects left: %q", q, left)
		}
	}
}

// workerPids are the running `sluice worker` children of a process.
func workerPids(t *testing.T, parent int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(parent) {
			continue
		}
		if cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); bytes.Contains(cmdline, []byte("worker")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func randInt(n int) int {
	v, _ := rand.Int(rand.Reader, big.NewInt(int64(n)))
	return int(v.Int64())
}

// startRun starts sluice run in the background.
func startRun(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, &out, &errb
}

// waitWorkers waits until the run has at least one worker running.
func waitWorkers(t *testing.T, cmd *exec.Cmd) []int {
	t.Helper()
	var pids []int
	await.Until(t, "a worker to start", func() bool {
		pids = workerPids(t, cmd.Process.Pid)
		return len(pids) > 0
	})
	return pids
}

// TestRunFanOutKilledWorker: three runs in which a random worker is
// killed (SIGKILL) mid-task, after writing its output and before
// committing it, give the results of one process, and leave nothing.
func TestRunFanOutKilledWorker(t *testing.T) {
	tg := localTarget(t)
	want := sluice(t, nil, "run", tg.query("shuffle")+" | show")
	if want.code != 0 {
		t.Fatal(want.stderr)
	}
	for run := range 3 {
		// The pause before each commit is only where workers are likely
		// to be caught; that the victim is mid-task when killed is made
		// sure by stopping it there.
		cmd, out, errb := startRun(t, nil, "run", "--workers", "4", "--store", tg.jobs, "--piece-size", "128KiB", "-v",
			"--x-pause-before-commit", "1s", tg.query("shuffle")+" | show")
		waitWorkers(t, cmd)
		// A victim somewhere in the run: a random point, not synchronisation
		// (freezeMidTask makes sure the victim is mid-task).
		time.Sleep(time.Duration(randInt(1500)) * time.Millisecond)
		w := freezeMidTask(t, tg, 30*time.Second)
		victim := w.pid
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %d: %v", victim, err)
		}
		err := cmd.Wait()
		if err != nil || out.String() != want.stdout {
			t.Fatalf("run %d (killed pid %d): %v: %s\ngot:\n%s\nwant:\n%s", run, victim, err, errb.String(), out.String(), want.stdout)
		}
		if !strings.Contains(errb.String(), fmt.Sprintf("on worker pid %d failed (signal: killed); retrying", victim)) {
			t.Fatalf("run %d: the driver did not retry the task of killed worker %d: %s", run, victim, errb.String())
		}
		if left := tg.left(t); len(left) != 0 {
			t.Fatalf("run %d: objects left: %q", run, left)
		}
		t.Logf("run %d: killed worker %d (phase %d task %d) between its output and its commit; retried", run, victim, w.phase, w.index)
	}
}

// TestRunFanOutInterrupt: Ctrl-C at the driver stops every worker and
// removes the job's objects.
func TestRunFanOutInterrupt(t *testing.T) {
	tg := localTarget(t)
	cmd, _, errb := startRun(t, nil, "run", "--workers", "3", "--store", tg.jobs, "--x-pause-before-commit", "20s", tg.query("A")+" | show")
	pids := waitWorkers(t, cmd)
	// Interrupted with a worker's output written and not committed: the
	// most there is to clean up.
	await.Until(t, "a worker's output", func() bool {
		keys := tg.left(t)
		return slices.ContainsFunc(jobWorkers(tg.jobs), func(w midTask) bool { return w.outputNotCommitted(keys) })
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupt {
		t.Fatalf("exit %d (%v), want %d: %s", code, err, exitInterrupt, errb.String())
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v to stop", d)
	}
	if withoutJobLine(errb.String()) == errb.String() || !strings.Contains(errb.String(), "--resume "+tg.jobs+"job-") {
		t.Errorf("stderr does not start with the job's line (where it is, how to resume it): %q", errb.String())
	}
	if lines := strings.Split(strings.TrimSpace(withoutJobLine(errb.String())), "\n"); len(lines) != 1 {
		t.Fatalf("stderr: %q", errb.String())
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			if stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !bytes.Contains(stat, []byte(") Z ")) {
				t.Errorf("worker %d still runs", pid)
			}
		}
	}
	if left := tg.left(t); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
}

// TestRunFanOutFailingTask: a piece whose bytes are corrupt (its footer
// is fine, so the driver plans it) fails its task every attempt; the
// driver exits 1 with one line naming the task, its piece and the
// worker, and leaves no object.
func TestRunFanOutFailingTask(t *testing.T) {
	runFailingTask(t, nil, nil, "worker pid ")
}

// TestRunFanOutBadSpec: a worker given a corrupt job spec, or a pipeline
// with a stage it does not know, fails its task every attempt; the driver
// exits 1 with one line naming the task and the worker and the cause,
// and leaves no object.
func TestRunFanOutBadSpec(t *testing.T) {
	tg := localTarget(t)
	q := "scan " + tg.taxi + " --columns payment_type | count-by payment_type | show"
	for _, c := range []struct {
		name string
		flag []string
		want string
	}{
		{"corrupt spec", []string{"--x-corrupt-spec"}, "job spec: "},
		{"unknown plan version", []string{"--x-spec-plan", `{"version":99,"stages":[{"stage":"scan","urls":["` + tg.taxi + `"]}]}`}, "plan version 99: this sluice reads version 1"},
		{"unknown stage", []string{"--x-spec-plan", `{"version":1,"stages":[{"stage":"scan","urls":["` + tg.taxi + `"],"batch_rows":65536,"int96_unit":"ns"},{"stage":"frobnicate"}]}`}, `unknown stage "frobnicate"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			jobs := filepath.Join(t.TempDir(), "jobs")
			args := append([]string{"run", "--workers", "2", "--attempts", "2", "--store", jobs}, c.flag...)
			r := sluice(t, nil, append(args, q)...)
			assertCleanFailure(t, r, exitError, c.want)
			for _, want := range []string{"map task ", " of 3 (", "failed 2 time(s)", "worker pid "} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr %q does not say %q", r.stderr, want)
				}
			}
			if left := (fanOutTarget{jobs: jobs + "/"}).left(t); len(left) != 0 {
				t.Fatalf("objects left: %q", left)
			}
		})
	}
}

// TestRunFanOutWorkerCannotReachStore: the driver reaches the job's
// store (MinIO) and its workers do not (their endpoint is a port where
// nothing listens): one line at the driver naming the task, the worker
// and the refused connection, exit 1, no object left.
func TestRunFanOutWorkerCannotReachStore(t *testing.T) {
	env, base, opts := minioBase(t)
	taxi := localTarget(t).taxi
	jobs := base + "jobs/"
	r := sluice(t, env, "run", "--workers", "2", "--attempts", "2", "--store", jobs,
		"--x-worker-env", "AWS_ENDPOINT_URL=http://127.0.0.1:1", "--x-worker-env", "AWS_MAX_ATTEMPTS=1",
		"scan "+taxi+" --columns payment_type | count-by payment_type | show")
	assertCleanFailure(t, r, exitError, "connection refused")
	for _, want := range []string{"map task ", "failed 2 time(s)", "worker pid ", "127.0.0.1:1"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	}
	if left := (fanOutTarget{env: env, jobs: jobs, openOpts: opts}).left(t); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
}

// TestRunFanOutToDestination: with --out, the reducers' groups land at
// the destination, one object per reducer and a manifest listing them;
// merged by key they are the one-process result, byte for byte.
func TestRunFanOutToDestination(t *testing.T) {
	tg := localTarget(t)
	dir := t.TempDir()
	dest := filepath.Join(dir, "dest")
	agg := "sum-by l_orderkey l_quantity,l_extendedprice"
	r := sluice(t, nil, "run", "--workers", "3", "--store", tg.jobs, "--out", dest+"/", "scan "+tg.lineitem+" | shuffle --by l_orderkey --to 5 | "+agg)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	parts, _ := filepath.Glob(filepath.Join(dest, "part-*.arrow"))
	manifest, err := os.ReadFile(filepath.Join(dest, "manifest.json"))
	if err != nil || len(parts) != 5 {
		t.Fatalf("%d parts, manifest %v", len(parts), err)
	}
	for _, p := range parts {
		if !bytes.Contains(manifest, []byte(filepath.Base(p))) {
			t.Fatalf("manifest does not list %s", p)
		}
	}
	if entries, _ := os.ReadDir(dest); len(entries) != 6 {
		t.Fatalf("%d objects at the destination, want 5 parts and the manifest", len(entries))
	}
	merged, one := filepath.Join(dir, "merged.arrows"), filepath.Join(dir, "one.arrows")
	if r := sluice(t, nil, "run", "merge --by l_orderkey "+strings.Join(parts, " ")+" | write "+merged); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := sluice(t, nil, "run", "scan "+tg.lineitem+" | "+agg+" | write "+one); r.code != 0 {
		t.Fatal(r.stderr)
	}
	a, _ := os.ReadFile(one)
	b, _ := os.ReadFile(merged)
	if len(a) < 1000 || !bytes.Equal(a, b) {
		t.Fatalf("merged parts: %d bytes, one process: %d bytes, not the same", len(b), len(a))
	}
	if left := tg.left(t); len(left) != 0 {
		t.Fatalf("objects left under the job store: %q", left)
	}
	r = sluice(t, nil, "run", "--workers", "3", "--out", dest+"2/", "scan "+tg.lineitem+" | "+agg)
	assertCleanFailure(t, r, exitUsage, "put a shuffle before it")

	// A second job into the same prefix is refused, the first's parts
	// untouched; with --overwrite its parts replace them.
	job := "scan " + tg.lineitem + " | shuffle --by l_orderkey --to 3 | " + agg
	r = sluice(t, nil, "run", "--workers", "3", "--out", dest+"/", job)
	if r.code != exitUsage || !strings.Contains(r.stderr, "holds 6 object(s) already") || !strings.Contains(r.stderr, "--overwrite") {
		t.Fatalf("a job into a full prefix: exit %d, %s", r.code, r.stderr)
	}
	if again, _ := filepath.Glob(filepath.Join(dest, "part-*.arrow")); !slices.Equal(again, parts) {
		t.Fatalf("a refused job changed the parts: %q", again)
	}
	if r := sluice(t, nil, "run", "--workers", "3", "--out", dest+"/", "--overwrite", job); r.code != 0 {
		t.Fatalf("--overwrite: exit %d: %s", r.code, r.stderr)
	}
	parts, _ = filepath.Glob(filepath.Join(dest, "part-*.arrow"))
	manifest, _ = os.ReadFile(filepath.Join(dest, "manifest.json"))
	if entries, _ := os.ReadDir(dest); len(parts) != 3 || len(entries) != 4 {
		t.Fatalf("after --overwrite: %d parts, %d objects; want the new job's 3 parts and its manifest", len(parts), len(entries))
	}
	for _, p := range parts {
		if !bytes.Contains(manifest, []byte(filepath.Base(p))) {
			t.Fatalf("the manifest does not list %s", p)
		}
	}
}

// runFailingTask runs a job of two workers, with the executor's
// environment and flags, over corruptTaxi: the tasks reading its corrupt
// file fail both attempts. The job must fail with one line naming the
// task, its piece and what says lists, and leave no object. It returns
// the job's stderr.
func runFailingTask(t *testing.T, env, flags []string, says ...string) string {
	t.Helper()
	dir, taxi := corruptTaxi(t)
	jobs := filepath.Join(dir, "jobs")
	args := append([]string{"run", "--workers", "2", "--attempts", "2", "--store", jobs}, flags...)
	r := sluice(t, env, append(args, "scan "+taxi+" | count-by payment_type | show")...)
	assertCleanFailure(t, r, exitError, "task ")
	for _, want := range append([]string{"part-00001.parquet row groups", "failed 2 time(s)"}, says...) {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr %q does not say %q", r.stderr, want)
		}
	}
	if left := (fanOutTarget{jobs: jobs + "/"}).left(t); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
	return r.stderr
}

// corruptTaxi generates a small taxi dataset in a temporary directory
// whose second file has corrupt pages (its footer is fine, so a driver
// plans it): every task reading it fails.
func corruptTaxi(t *testing.T) (dir, taxi string) {
	t.Helper()
	dir = t.TempDir()
	taxi = filepath.Join(dir, "taxi")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "20000", "--files", "2", "--row-group-rows", "5000", "--out", taxi, "-q"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	f := filepath.Join(taxi, "part-00001.parquet")
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// Every page (a scan reads only the columns its stages use), not the
	// footer: its length is the 4 bytes before the closing magic.
	footer := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	for i := 4; i < len(b)-8-footer; i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, taxi
}

// midTask is a worker process of a run, with the task it runs.
type midTask struct {
	pid          int
	phase, index int
	// attempt is the worker's SLUICE_ATTEMPT: a1 for the local executor,
	// slurm-JOB-INDEX for Slurm, the pod's name for Kubernetes.
	attempt string
}

// freezeMidTask waits for a worker of a job under tg.jobs that has
// written its output and not committed it, and holds it there stopped
// (SIGSTOP): a stopped worker cannot commit, so a kill that follows
// lands mid-task however slowly it comes. Workers found elsewhere in
// their task are let go again (SIGCONT).
func freezeMidTask(t *testing.T, tg fanOutTarget, within time.Duration) midTask {
	t.Helper()
	// Polled: nothing tells us when a worker of another process gets there.
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, w := range jobWorkers(tg.jobs) {
			if syscall.Kill(w.pid, syscall.SIGSTOP) != nil {
				continue
			}
			if stopped(w.pid) && w.outputNotCommitted(tg.left(t)) {
				// let it go should the test end before killing it
				t.Cleanup(func() { syscall.Kill(w.pid, syscall.SIGCONT) })
				return w
			}
			syscall.Kill(w.pid, syscall.SIGCONT)
		}
	}
	t.Fatalf("no worker caught between its output and its commit within %v", within)
	return midTask{}
}

// jobWorkers are the processes running `sluice worker` for a job under
// jobs, whichever executor started them (all run on this machine).
func jobWorkers(jobs string) []midTask {
	entries, _ := os.ReadDir("/proc")
	var ws []midTask
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.Split(string(cmdline), "\x00")
		if len(args) < 2 || args[1] != "worker" || !strings.Contains(string(cmdline), jobs) {
			continue
		}
		w := midTask{pid: pid, phase: -1, index: -1}
		for i, a := range args[:len(args)-1] {
			switch a {
			case "--phase":
				w.phase, _ = strconv.Atoi(args[i+1])
			case "--index":
				w.index, _ = strconv.Atoi(args[i+1])
			}
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		for _, kv := range strings.Split(string(environ), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "SLUICE_ATTEMPT":
				w.attempt = v
			case "JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID":
				if w.index < 0 {
					w.index, _ = strconv.Atoi(v)
				}
			}
		}
		if w.phase >= 0 && w.index >= 0 && w.attempt != "" {
			ws = append(ws, w)
		}
	}
	return ws
}

// stopped waits until a process sent SIGSTOP is stopped; false if it
// ended first.
func stopped(pid int) bool {
	for {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 || len(stat) < i+3 {
			return false
		}
		switch stat[i+2] {
		case 'T', 't':
			return true
		case 'Z', 'X':
			return false
		}
		time.Sleep(time.Millisecond) // polling /proc: a grandchild's stop is no event of ours
	}
}

// outputNotCommitted says whether, among the objects under the jobs
// URL (keys), the worker's attempt has an output and no done record.
func (w midTask) outputNotCommitted(keys []string) bool {
	name := fmt.Sprintf("t%05d-%s-", w.index, w.attempt)
	out := false
	for _, k := range keys {
		dir, base := path.Split("/" + k)
		if !strings.HasPrefix(base, name) {
			continue
		}
		switch {
		case strings.HasSuffix(dir, fmt.Sprintf("/p%d/done/", w.phase)):
			return false
		case strings.Contains(dir, fmt.Sprintf("/p%d/", w.phase)) && !strings.Contains(dir, "/fail/"):
			out = true
		}
	}
	return out
}

// TestRunFanOutAggregatesAndDistinct: count(distinct), the sketch,
// quantiles, the variances, any_value and distinct give the same bytes
// in one process and over 4 workers.
func TestRunFanOutAggregatesAndDistinct(t *testing.T) {
	queries := map[string]string{
		// every aggregate whose partial state is more than a running value
		"aggs": `scan {lineitem} | agg-by l_returnflag 'count(distinct l_partkey), approx_count_distinct(l_orderkey), ` +
			`approx_count_distinct(l_shipmode) as modes, median(l_extendedprice), quantile(l_quantity, 0.99) as p99, ` +
			`stddev(l_discount), stddev_pop(l_extendedprice), var_samp(l_quantity), var_pop(l_tax), any_value(l_comment), ` +
			`min(l_comment), max(l_shipdate)'`,
		// the first row of each key, in dataset order, at the driver
		"distinct-on": "scan {lineitem} --columns l_orderkey,l_shipmode,l_quantity,l_comment | distinct --on l_shipmode,l_quantity",
		"distinct":    "scan {lineitem} --columns l_returnflag,l_shipmode,l_linestatus | distinct",
	}
	for name, q := range queries {
		fanOutQueries[name] = q
	}
	t.Cleanup(func() {
		for name := range queries {
			delete(fanOutQueries, name)
		}
	})
	tg := localTarget(t)
	for _, q := range []string{"aggs", "distinct-on", "distinct"} {
		runBoth(t, tg, q, "--piece-size", "128KiB")
	}
}

// TestRunFanOutResume: a driver SIGKILLed while a reducer straggles takes
// its workers with it and leaves the job, whose map phase and other
// reducers are committed; run --resume goes on from there, runs only the
// reducer missing, gives the one-process result and removes the job.
func TestRunFanOutResume(t *testing.T) {
	tg := localTarget(t)
	q := "scan " + tg.lineitem + " --columns l_orderkey,l_quantity | shuffle --by l_orderkey --to 3 | sum-by l_orderkey l_quantity | top 5 --by l_quantity --desc | to-csv"
	want := sluice(t, nil, "run", q)
	jobs := filepath.Join(t.TempDir(), "jobs")
	// One attempt a task: the straggler gets no duplicate that could
	// finish the job before the kill.
	cmd, _, _ := startRun(t, nil, "run", "--workers", "2", "--attempts", "1", "--store", jobs, "--x-worker-env", fanouthook.EnvStraggle+"=1/0/60s", q)
	// Wait for the map phase's manifest and a reducer's commit: the job
	// is then stuck on reducer 0's straggling first attempt.
	await.Until(t, "the map phase's manifest and two reducers' commits", func() bool {
		m, _ := filepath.Glob(filepath.Join(jobs, "job-*", "p0", "manifest.json"))
		d, _ := filepath.Glob(filepath.Join(jobs, "job-*", "p1", "done", "t0000[12]-*"))
		return len(m) == 1 && len(d) == 2
	})
	workers := workerPids(t, cmd.Process.Pid)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, pid := range workers {
		for alive := time.Now(); syscall.Kill(pid, 0) == nil && !zombie(pid); {
			if time.Since(alive) > 5*time.Second {
				t.Fatalf("worker %d still runs 5 s after its driver was killed", pid)
			}
			time.Sleep(10 * time.Millisecond) // polling /proc: no event reaches us from a grandchild
		}
	}
	r := sluice(t, nil, "jobs", "ls", jobs)
	if !strings.Contains(r.stdout, " 1/2 ") {
		t.Fatalf("jobs ls after the kill: %q", r.stdout)
	}
	fields := strings.Fields(strings.TrimSpace(r.stdout))
	job := fields[len(fields)-1]
	// A driver resumes only a spec signed with its user's key: not one
	// changed in the store (a byte more), nor another user's job.
	spec := filepath.Join(strings.TrimPrefix(job, "file://"), "job.json")
	was, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, append(was, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	assertCleanFailure(t, sluice(t, nil, "run", "--workers", "2", "--resume", job), 1, "is not signed with this driver's key")
	if err := os.WriteFile(spec, was, 0o644); err != nil {
		t.Fatal(err)
	}
	other := []string{"XDG_CONFIG_HOME=" + t.TempDir()}
	assertCleanFailure(t, sluice(t, other, "run", "--workers", "2", "--resume", job), 1, "is not signed with this driver's key")
	got := sluice(t, nil, "run", "--workers", "2", "-v", "--resume", job)
	if got.code != 0 || got.stdout != want.stdout {
		t.Fatalf("resumed: exit %d, %q; one process %q; %s", got.code, got.stdout, want.stdout, got.stderr)
	}
	if !strings.Contains(got.stderr, "phase 0 (map): committed before the driver died") {
		t.Errorf("the resumed run did the map phase again: %s", got.stderr)
	}
	if left := (fanOutTarget{jobs: jobs + "/"}).left(t); len(left) != 0 {
		t.Fatalf("left after the resumed job: %q", left)
	}
	assertCleanFailure(t, sluice(t, nil, "run", "--workers", "2", "--resume", job), exitNotFound, "job.json")
	assertCleanFailure(t, sluice(t, nil, "run", "--workers", "2", "--resume", jobs+"/", "scan x"), exitUsage, "give no pipeline")
}

// zombie says pid has ended and waits for its reaper.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// TestRunFanOutMemory: --memory reaches the workers (the job's spec
// carries it): reducers whose sort spills at a 1 MiB budget give one
// process's bytes, and the event log has each attempt's peak RSS.
func TestRunFanOutMemory(t *testing.T) {
	tg := localTarget(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	runBoth(t, tg, "sort", "--piece-size", "128KiB", "--memory", "1MiB", "--events", events, "--keep")
	specs, _ := filepath.Glob(filepath.Join(tg.jobs, "job-*", "job.json"))
	if len(specs) != 1 {
		t.Fatalf("want the kept job's spec, found %q", specs)
	}
	var spec struct {
		Memory int64 `json:"memory"`
	}
	if b, err := os.ReadFile(specs[0]); err != nil || json.Unmarshal(b, &spec) != nil || spec.Memory != 1<<20 {
		t.Fatalf("the job's spec carries memory %d (%v), want %d: its workers do not get --memory", spec.Memory, err, 1<<20)
	}
	b, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	var attempts, withRSS int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev struct {
			Type   string `json:"type"`
			MaxRSS int64  `json:"max_rss"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "attempt" {
			attempts++
			if ev.MaxRSS > 1<<20 {
				withRSS++
			}
		}
	}
	if attempts == 0 || withRSS != attempts {
		t.Fatalf("%d attempts, %d with a peak RSS: %s", attempts, withRSS, b)
	}
	// Reducers whose aggregation gets 128 KiB of 256 KiB hold about 2,000
	// groups each, over 300 KiB: they spill them, and give one process's
	// bytes.
	runBoth(t, tg, "shuffle", "--piece-size", "128KiB", "--memory", "256KiB")
}
