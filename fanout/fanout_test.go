package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/internal/arrowtest"
	"github.com/sluice-data/sluice/internal/fanouthook"
	"github.com/sluice-data/sluice/internal/s3test"
	"github.com/sluice-data/sluice/internal/testenv"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/scan"
	"github.com/sluice-data/sluice/store"
	"github.com/sluice-data/sluice/store/storetest"
)

// The test binary is its own worker: the local executor starts it with
// DIST_TEST_WORKER set, and TestMain runs the task instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("DIST_TEST_WORKER") != "" {
		os.Exit(testWorker())
	}
	if dir := os.Getenv("FANOUT_TEST_DRIVER"); dir != "" {
		os.Exit(testDriver(dir))
	}
	goleak.VerifyTestMain(m)
}

func testWorker() int {
	if c, err := strconv.ParseInt(os.Getenv("DIST_TEST_CHUNK"), 10, 64); err == nil {
		maxChunk = c
	}
	t, err := TaskFromArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "sluice: %v\n", err)
		return 2
	}
	if err := RunTask(context.Background(), t, Env{}); err != nil {
		fmt.Fprintf(os.Stderr, "sluice: %s\n", oneLine(err))
		return 1
	}
	return 0
}

// testDriver is a driver process for TestWorkersDieWithTheDriver: it
// runs two workers that note their pid in dir and sleep, and waits.
func testDriver(dir string) int {
	l := NewLocal([]string{"/bin/sh", "-c", `echo $$ > "$0/pid-$JOB_COMPLETION_INDEX.tmp" && mv "$0/pid-$JOB_COMPLETION_INDEX.tmp" "$0/pid-$JOB_COMPLETION_INDEX" && exec sleep 300`, dir})
	err := l.RunPhase(context.Background(), PhaseRun{Job: "job-t", Spec: "spec", Tasks: 2, Workers: 2, Attempts: 1, Kind: PhaseMap, Argv: []string{}})
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// testQueries are the pipelines the tests run after a scan of the taxi
// dataset: "A URL" is query A over the dataset at URL, "S URL" the same
// through a shuffle, "B URL" a filter and aggregates.
var testQueries = map[string]string{
	"A":  "sum-by pickup_date trip_distance | top 9 --by trip_distance --desc",
	"S":  "shuffle --by pickup_date --to 5 | sum-by pickup_date trip_distance | top 9 --by trip_distance --desc",
	"T":  "filter 'trip_distance > 1' | top 700 --by payment_type",        // ties everywhere: few payment types
	"O":  "shuffle --by pickup_date --to 5 | sort --by payment_type:desc", // a sort after a shuffle, ties everywhere
	"O2": "shuffle --by payment_type --to 3 | filter 'trip_distance > 0.5' | sort --by pickup_date,trip_distance:desc | head 5000",
	"M":  "select trip_distance,pickup_date,payment_type", // every row, no shuffle: the driver streams every map output
	"H":  "select trip_distance,pickup_date | head 2500",
	"B":  "select pickup_date,payment_type,trip_distance | filter 'trip_distance > 1.5' | agg-by payment_type 'sum(trip_distance), mean(trip_distance), count(), min(pickup_date), max(trip_distance)'",
}

// testPlan is the plan of a test query: a word of testQueries and a URL.
func testPlan(text string) (*plan.Plan, error) {
	word, url, _ := strings.Cut(text, " ")
	q, ok := testQueries[word]
	if !ok {
		return nil, fmt.Errorf("unknown query %q", word)
	}
	return plan.Parse("scan " + url + " --batch-rows 900 --columns pickup_date,payment_type,trip_distance | " + q)
}

func mustPlan(t *testing.T, text string) *plan.Plan {
	t.Helper()
	p, err := testPlan(text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runLocal runs p in this process.
func runLocal(p *plan.Plan, env exec.Env, opts exec.Options) error {
	pipe, err := exec.Compile(p, env)
	if err != nil {
		return err
	}
	return exec.Run(context.Background(), pipe, opts)
}

// testData writes a small taxi dataset: 4 files of 6 row groups.
func testData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, _, err := store.Open(context.Background(), dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := gen.Taxi(context.Background(), st, "taxi", gen.Options{Rows: 24_000, Files: 4, Seed: 3, RowGroupRows: 1000}); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "taxi") + "/"
}

// rows runs a plan with a collecting sink as its env's Output and prints
// its rows, floats as their bits.
func rows(t *testing.T, run func(exec.Env) error) []string {
	t.Helper()
	var out []string
	env := exec.Env{Output: exec.Collect(nil, func(rec arrow.RecordBatch) error {
		out = append(out, arrowtest.ExactRows(rec)...)
		return nil
	})}
	if err := run(env); err != nil {
		t.Fatal(err)
	}
	return out
}

func testOptions(jobs string) Options {
	ex := NewLocal([]string{os.Args[0]})
	ex.Env = []string{"DIST_TEST_WORKER=1"}
	return Options{
		Workers:    3,
		Store:      jobs,
		PieceBytes: 1 << 10, // several pieces per file
		Executor:   ex,
	}
}

// objects lists what is left under a store URL.
func objects(t *testing.T, url string) []string {
	t.Helper()
	var keys []string
	for _, in := range storetest.List(t, url, store.Options{}) {
		keys = append(keys, in.Key)
	}
	return keys
}

func TestRunMatchesOneProcess(t *testing.T) {
	taxi := testData(t)
	for _, q := range []string{"A", "S", "B", "T", "H"} {
		t.Run(q, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			text := q + " " + taxi
			p := mustPlan(t, text)
			want := rows(t, func(env exec.Env) error { return runLocal(p, env, exec.Options{Mem: mem}) })
			if len(want) == 0 {
				t.Fatal("no rows")
			}
			jobs := t.TempDir()
			opts := testOptions(jobs)
			opts.Mem = mem
			var phases []string
			opts.Log = func(f string, a ...any) { phases = append(phases, fmt.Sprintf(f, a...)) }
			got := rows(t, func(env exec.Env) error { opts.Env = env; return Run(context.Background(), p, opts) })
			if !slices.Equal(got, want) {
				t.Fatalf("fanned out:\n%q\none process:\n%q", got, want)
			}
			if left := objects(t, jobs); len(left) != 0 {
				t.Fatalf("objects left: %q", left)
			}
			if ran := strings.Join(phases, "\n"); q == "T" && !strings.Contains(ran, "filter | top | write stream") || q == "H" && !strings.Contains(ran, "head | write stream") {
				t.Fatalf("the map tasks do not run the head or top: %q", phases)
			}
			var n, tasks int
			if _, err := fmt.Sscanf(phases[0], "planned %d phase(s), %d map task(s)", &n, &tasks); err != nil || tasks <= 4 {
				t.Fatalf("want more map tasks than the 4 files (pieces of row groups); log: %q", phases)
			}
		})
	}
}

// A sort after a shuffle (reducers sort their parts, the driver merges
// them) and a pipeline whose every row reaches the driver give one
// process's rows in its order, ties in dataset order; the driver reads
// the tasks' outputs in chunks (small ones here, so every output is
// several) and leaks nothing.
func TestSortAfterShuffleAndStreaming(t *testing.T) {
	taxi := testData(t)
	defer func(c int64) { maxChunk = c }(maxChunk)
	maxChunk = 4 << 10
	for _, word := range []string{"O", "O2", "M"} {
		t.Run(word, func(t *testing.T) {
			text := word + " " + taxi
			p := mustPlan(t, text)
			want := rows(t, func(env exec.Env) error { return runLocal(p, env, exec.Options{}) })
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			opts := testOptions(t.TempDir())
			opts.Mem = mem
			opts.Executor.(*Local).Env = append(opts.Executor.(*Local).Env, "DIST_TEST_CHUNK=4096")
			got := rows(t, func(env exec.Env) error { opts.Env = env; return Run(context.Background(), p, opts) })
			if len(want) < 2000 || !slices.Equal(got, want) {
				t.Fatalf("fanned out %d rows, one process %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// With every task run twice at once and the job kept, each manifest
// lists one output per task and no other attempt's objects are left.
func TestDuplicateAttemptsCommitOnce(t *testing.T) {
	taxi := testData(t)
	text := "S " + taxi
	p := mustPlan(t, text)
	want := rows(t, func(env exec.Env) error { return runLocal(p, env, exec.Options{}) })
	jobs := t.TempDir()
	opts := testOptions(jobs)
	opts.Keep = true
	opts.PieceBytes = 64 << 20 // a task per file
	ctx := fanouthook.WithDriver(context.Background(), &fanouthook.Driver{DuplicateAll: true})
	got := rows(t, func(env exec.Env) error { opts.Env = env; return Run(ctx, p, opts) })
	if !slices.Equal(got, want) {
		t.Fatalf("fanned out:\n%q\none process:\n%q", got, want)
	}
	left := objects(t, jobs)
	var shuffles, files, other []string
	for _, k := range left {
		switch {
		case strings.HasSuffix(k, ".shuffle"):
			shuffles = append(shuffles, k)
		case strings.HasSuffix(k, ".arrows"):
			files = append(files, k)
		case strings.HasSuffix(k, "/job.json") || strings.HasSuffix(k, "/job.sig") || strings.HasSuffix(k, "/manifest.json"):
		default:
			other = append(other, k)
		}
	}
	if len(shuffles) != 4 || len(files) != 5 || len(other) != 0 {
		t.Fatalf("%d shuffle objects (want 4, one per map task), %d reducer streams (want 5), others %q", len(shuffles), len(files), other)
	}
}

// The map objects of a shuffle go one to a prefix by default, all under
// one with Spread 1.
func TestSpreadOverPrefixes(t *testing.T) {
	taxi := testData(t)
	text := "S " + taxi
	for _, c := range []struct{ spread, dirs int }{{0, 4}, {1, 1}, {2, 2}} {
		jobs := t.TempDir()
		opts := testOptions(jobs)
		opts.Keep, opts.Spread = true, c.spread
		opts.PieceBytes = 64 << 20 // a task per file
		p := mustPlan(t, text)
		rows(t, func(env exec.Env) error { opts.Env = env; return Run(context.Background(), p, opts) })
		dirs := map[string]bool{}
		for _, k := range objects(t, jobs) {
			if strings.HasSuffix(k, ".shuffle") {
				dirs[path.Dir(k)] = true
			}
		}
		if len(dirs) != c.dirs {
			t.Errorf("spread %d: map objects under %d prefixes %v, want %d", c.spread, len(dirs), dirs, c.dirs)
		}
	}
}

func TestTaskFailuresFailTheJob(t *testing.T) {
	taxi := testData(t)
	p := mustPlan(t, "A "+taxi)
	// edit is how the spec is changed: by the driver before it pins the
	// spec (as a driver of another version would write it), or in the
	// store after the driver wrote it (as anyone who can write there
	// could), which every worker refuses.
	planVersion99 := func(was []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(was, &m); err != nil {
			t.Error(err)
		}
		m["plan"].(map[string]any)["version"] = 99
		b, err := json.Marshal(m)
		if err != nil {
			t.Error(err)
		}
		return b
	}
	corrupt := func([]byte) []byte {
		return []byte(`{"version": 2, "plan": {"version": 1}, "phases": [{"kind": "map", "tasks": 99999999`)
	}
	cases := []struct {
		name    string
		edit    func([]byte) []byte
		inStore bool
		want    string
	}{
		// A worker refuses a plan of a version it does not know, in one line.
		{"unknown plan version", planVersion99, false, "plan version 99: this sluice reads version 1"},
		{"corrupt spec", corrupt, false, "job spec"},
		{"spec edited in the store", planVersion99, true, "is not the spec its driver wrote"},
		{"spec replaced in the store", corrupt, true, "is not the spec its driver wrote"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jobs := t.TempDir()
			opts := testOptions(jobs)
			opts.Attempts = 2
			hooks := &fanouthook.Driver{SpecEdit: c.edit}
			if c.inStore {
				hooks = &fanouthook.Driver{AfterSpec: func(ctx context.Context, st *store.Store, key string) {
					was, err := st.ReadAll(ctx, key)
					if err != nil {
						t.Error(err)
					}
					if _, err := st.Put(ctx, key, bytes.NewReader(c.edit(was)), store.WriteOptions{}); err != nil {
						t.Error(err)
					}
				}}
			}
			ctx := fanouthook.WithDriver(context.Background(), hooks)
			start := time.Now()
			err := Run(ctx, p, opts)
			var te *TaskError
			if !errors.As(err, &te) {
				t.Fatalf("got %v, want a TaskError", err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) || !strings.Contains(msg, "map task ") ||
				!strings.Contains(msg, "worker pid ") || !strings.Contains(msg, "row groups") || te.Attempts != 2 {
				t.Fatalf("error %q: want one line naming the task, its piece, the worker and %q, after 2 attempts", msg, c.want)
			}
			if left := objects(t, jobs); len(left) != 0 {
				t.Fatalf("objects left: %q", left)
			}
			t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), msg)
		})
	}
}

// A worker that cannot reach the job's store fails its task with one
// line naming it, and the job leaves nothing in the store. The driver
// reaches the MinIO of ./scripts/test; the workers are told to use a
// port where nothing listens.
func TestWorkerCannotReachStore(t *testing.T) {
	endpoint := os.Getenv("SLUICE_TEST_S3_ENDPOINT")
	if endpoint == "" {
		testenv.Unavailable(t, "SLUICE_TEST_S3_ENDPOINT is not set; ./scripts/test runs this test against MinIO")
	}
	bucket := os.Getenv("SLUICE_TEST_S3_BUCKET")
	if bucket == "" {
		bucket = "sluice-test"
	}
	// Stores from an Open function are the caller's to close.
	open := func(ctx context.Context, url string) (*store.Store, string, error) {
		st, key, err := store.Open(ctx, url, store.Options{Endpoint: endpoint})
		if err == nil {
			t.Cleanup(func() { st.Close() })
		}
		return st, key, err
	}
	s3test.EnsureBucket(t, endpoint, bucket)
	taxi := testData(t)
	p := mustPlan(t, "A "+taxi)
	opts := testOptions("s3://" + bucket + "/dist-unreachable/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/")
	opts.Open, opts.Attempts = open, 1
	opts.Executor.(*Local).Env = append(opts.Executor.(*Local).Env, "AWS_ENDPOINT_URL=http://127.0.0.1:1", "AWS_MAX_ATTEMPTS=1")
	err := Run(context.Background(), p, opts)
	var te *TaskError
	if !errors.As(err, &te) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "worker pid ") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("got %v, want one line naming the task, the worker and the endpoint it could not reach", err)
	}
	t.Log(err)
	st, prefix, err := open(context.Background(), opts.Store)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := st.List(context.Background(), prefix)
	if err != nil || len(infos) != 0 {
		t.Fatalf("left under %s: %v %v", opts.Store, infos, err)
	}
}

// A piece whose key matches no file of the scan is an error after the
// run, not an empty result.
func TestPieceThatMatchesNothingFails(t *testing.T) {
	taxi := testData(t)
	p := mustPlan(t, "A "+taxi)
	compiled, err := exec.Compile(p, exec.Env{})
	if err != nil {
		t.Fatal(err)
	}
	w := &taskRun{plan: p}
	for _, pc := range []Piece{{Key: "part-00001.parquet", Lo: 0, Hi: 2}, {Key: "part-00001.parquet", Lo: 4, Hi: 9}, {Key: "nope.parquet", Lo: 0, Hi: 1}} {
		src, check, err := w.pieceSource(compiled.Source, pc, func(scan.Stats) {})
		if err != nil {
			t.Fatal(err)
		}
		var rows int64
		sink := exec.Collect(nil, func(rec arrow.RecordBatch) error { rows += rec.NumRows(); return nil })
		if err := exec.Run(context.Background(), exec.Pipeline{Source: src, Stages: []exec.Stage{sink}}, exec.Options{}); err != nil {
			t.Fatal(err)
		}
		err = check()
		switch {
		case pc.Hi == 2 && (err != nil || rows != 2000):
			t.Errorf("%s: %d rows, %v; want 2000 rows", pc, rows, err)
		case pc.Hi != 2 && err == nil:
			t.Errorf("%s: %d rows and no error", pc, rows)
		}
	}
}

// A straggler gets a duplicate attempt once the other tasks are done;
// the duplicate commits first, the job ends long before the straggler
// would, and the result is still that of one process.
func TestStragglerGetsADuplicate(t *testing.T) {
	taxi := testData(t)
	text := "S " + taxi
	p := mustPlan(t, text)
	want := rows(t, func(env exec.Env) error { return runLocal(p, env, exec.Options{}) })
	opts := testOptions(t.TempDir())
	opts.PieceBytes = 64 << 20 // a task per file
	local := opts.Executor.(*Local)
	local.Env = append(local.Env, fanouthook.EnvStraggle+"="+fanouthook.Straggle(0, 2, 30*time.Second))
	var log []string
	opts.Log = func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	start := time.Now()
	got := rows(t, func(env exec.Env) error { opts.Env = env; return Run(context.Background(), p, opts) })
	took := time.Since(start)
	if !slices.Equal(got, want) {
		t.Fatalf("fanned out:\n%q\none process:\n%q", got, want)
	}
	if took > 15*time.Second {
		t.Fatalf("took %v: the straggler's duplicate did not finish the task first", took)
	}
	if !strings.Contains(strings.Join(log, "\n"), "map task 2: duplicate attempt a2") {
		t.Fatalf("no duplicate of task 2 in the log: %q", log)
	}
}

// readInOrder checks every input against its checksum before decoding.
func TestReadInOrderChecksChecksums(t *testing.T) {
	ctx := context.Background()
	st := store.New(store.NewMemDriver(), "mem://dist-test/")
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(mem)
	b.AppendValues([]int64{1, 2, 3}, nil)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 3)
	col.Release()
	var buf strings.Builder
	err := exec.Run(ctx, exec.Pipeline{Source: exec.FromBatches(schema, rec), Stages: []exec.Stage{exec.WriteIPC(&buf)}}, exec.Options{Mem: mem})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	data := []byte(buf.String())
	for i := range 2 {
		if _, err := st.Put(ctx, fmt.Sprintf("o%d", i), strings.NewReader(string(data)), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(sums []uint32) (int64, error) {
		reqs := []fetchRequest{{"o0", int64(len(data))}, {"o1", int64(len(data))}}
		ins := make([]input, len(reqs))
		for i, r := range reqs {
			ins[i] = input{key: r.key, n: r.size, size: r.size, crc: sums[i], name: r.key}
		}
		srcs, done := (&job{st: st}).streams(ctx, ins, false, readBudget)
		src := exec.Concat(srcs...)
		var rows int64
		err = exec.Run(ctx, exec.Pipeline{Source: src, Stages: []exec.Stage{exec.Collect(nil, func(r arrow.RecordBatch) error { rows += r.NumRows(); return nil })}}, exec.Options{Mem: mem})
		if rerr := done(); rerr != nil {
			err = rerr
		}
		return rows, err
	}
	if rows, err := read([]uint32{checksum(data), checksum(data)}); err != nil || rows != 6 {
		t.Fatalf("%d rows, %v", rows, err)
	}
	if _, err := read([]uint32{checksum(data), checksum(data) ^ 1}); err == nil || !strings.Contains(err.Error(), "o1: checksum") {
		t.Fatalf("a wrong checksum: %v", err)
	}
}

// The planner takes a sort or an aggregation after a shuffle and
// refuses what it cannot run as one process would, in one line.
func TestPlanAfterShuffle(t *testing.T) {
	taxi := testData(t)
	for _, c := range []struct {
		name   string
		stages string
		out    string
		want   string // an error, or "" for a plan of a map and a reduce phase
	}{
		{"sort", "filter 'trip_distance > 1' | sort --by payment_type | head 5", "", ""},
		{"agg", "count-by payment_type", "", ""},
		{"top", "top 5 --by payment_type", "", "must come to an aggregation (sum-by, count-by, agg-by) or a sort"},
		{"select before sort", "select payment_type | sort --by payment_type", "", "put select before the shuffle"},
		{"sort to a destination", "sort --by payment_type", "file:///tmp/x/", "each reducer's part is sorted, not the whole"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := plan.Parse("scan " + taxi + " --columns pickup_date,payment_type,trip_distance | shuffle --by pickup_date --to 3 | " + c.stages)
			if err != nil {
				t.Fatal(err)
			}
			compiled, err := exec.Compile(p, exec.Env{})
			if err != nil {
				t.Fatal(err)
			}
			pl, err := makePlan(context.Background(), p, compiled, Options{PieceBytes: 64 << 20, Out: c.out})
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("got %v, want one line saying %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(pl.phases) != 2 || pl.phases[0].Position != (c.name == "sort") || pl.dropPosition != (c.name == "sort") {
				t.Fatalf("phases %+v, drop position %v", pl.phases, pl.dropPosition)
			}
		})
	}
}

// A shuffle's sort that a head follows runs as a top-N in the reducers:
// each sends at most N rows, and the result is one process's.
func TestTopNAfterShuffle(t *testing.T) {
	taxi := testData(t)
	for _, n := range []int{1, 7, 700} {
		p, err := plan.Parse(fmt.Sprintf("scan %s --batch-rows 900 --columns pickup_date,payment_type,trip_distance | shuffle --by pickup_date --to 4 | sort --by payment_type,trip_distance:desc | head %d", taxi, n))
		if err != nil {
			t.Fatal(err)
		}
		want := rows(t, func(env exec.Env) error { return runLocal(p, env, exec.Options{}) })
		opts := testOptions(t.TempDir())
		var log bytes.Buffer
		opts.Events = &log
		got := rows(t, func(env exec.Env) error { opts.Env = env; return Run(context.Background(), p, opts) })
		if !slices.Equal(got, want) || len(got) != n {
			t.Fatalf("head %d: fanned out %d rows, one process %d, or not the same", n, len(got), len(want))
		}
		for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
			var ev Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Type == EventAttempt && ev.Kind == PhaseReduce && ev.RowsOut > int64(n) {
				t.Errorf("head %d: reducer %d sent %d rows", n, ev.Task, ev.RowsOut)
			}
		}
	}
}

// A committed map output that a reducer finds missing or corrupt is made
// again by its map task, and the job's rows are one process's.
func TestLostMapOutputIsRecomputed(t *testing.T) {
	taxi := testData(t)
	p := mustPlan(t, "S "+taxi)
	want := rows(t, func(env exec.Env) error { return runLocal(p, env, exec.Options{}) })
	for _, c := range []struct {
		name  string
		spoil func(ctx context.Context, st *store.Store, key string) error
	}{
		{"missing", func(ctx context.Context, st *store.Store, key string) error { return st.Delete(ctx, key) }},
		{"corrupt", func(ctx context.Context, st *store.Store, key string) error {
			b, err := st.ReadAll(ctx, key)
			if err != nil {
				return err
			}
			// The start of its first part (a schema message's metadata),
			// then bytes all through its first half.
			for i := range min(len(b), 64) {
				b[i] ^= 0x5a
			}
			for i := 64; i < len(b)/2; i += 97 {
				b[i] ^= 0x5a
			}
			_, err = st.Put(ctx, key, bytes.NewReader(b), store.WriteOptions{})
			return err
		}},
		// Cut short, as by a disk that lost its tail: the index at the
		// end is gone, and reads of the parts run past the end.
		{"truncated", func(ctx context.Context, st *store.Store, key string) error {
			b, err := st.ReadAll(ctx, key)
			if err != nil {
				return err
			}
			_, err = st.Put(ctx, key, bytes.NewReader(b[:len(b)/3]), store.WriteOptions{})
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			jobs := t.TempDir()
			opts := testOptions(jobs)
			// Parts span many chunks: a corrupt one's first bytes reach
			// the IPC decoder before its checksum can be checked.
			opts.Executor.(*Local).Env = append(opts.Executor.(*Local).Env, "DIST_TEST_CHUNK=128")
			var spoiled string
			var logged []string
			opts.Log = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
			ctx := fanouthook.WithDriver(context.Background(), &fanouthook.Driver{AfterPhase: func(ctx context.Context, st *store.Store, phase int, keys []string) {
				if phase != 0 || spoiled != "" {
					return
				}
				spoiled = keys[1]
				if err := c.spoil(ctx, st, spoiled); err != nil {
					t.Error(err)
				}
			}})
			got := rows(t, func(env exec.Env) error { opts.Env = env; return Run(ctx, p, opts) })
			if spoiled == "" || !slices.Equal(got, want) {
				t.Fatalf("spoiled %q; fanned out:\n%q\none process:\n%q", spoiled, got, want)
			}
			if !slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, "map task 1: its committed output") }) {
				t.Errorf("no word of the lost output in the log: %q", logged)
			}
			if left := objects(t, jobs); len(left) != 0 {
				t.Fatalf("objects left: %q", left)
			}
		})
	}
}

// TestPartitionedJoin: a join whose two sides are shuffled by their keys
// and joined by reducers gives one process's rows in its order, for
// every kind of join, in memory and spilled; auto picks it for a side
// past Options.Broadcast and for a right join; and a lost map output of
// the other side is made again.
func TestPartitionedJoin(t *testing.T) {
	taxi := testData(t)
	other := "(scan " + taxi + " --columns pu_location_id,vendor_id,tip_amount --filter 'trip_distance > 8 and passenger_count = 2')"
	for _, how := range plan.JoinKinds {
		for _, spill := range []string{"", " --memory 16KiB"} {
			t.Run(how+spill, func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				p := parsePlan(t, "scan "+taxi+" --columns do_location_id,fare_amount,payment_type | filter 'fare_amount > 5' | join "+other+
					" --on do_location_id=pu_location_id --how "+how+spill+" --prefix o_ | head 100000")
				want := rows(t, func(env exec.Env) error { return runLocal(p, env, exec.Options{Mem: mem}) })
				if len(want) < 100 {
					t.Fatalf("%d rows: the data barely joins", len(want))
				}
				jobs := t.TempDir()
				opts := testOptions(jobs)
				opts.Mem, opts.Join = mem, JoinPartitioned
				var logged []string
				opts.Log = func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }
				var spoiled string
				ctx := fanouthook.WithDriver(context.Background(), &fanouthook.Driver{AfterPhase: func(ctx context.Context, st *store.Store, phase int, keys []string) {
					if phase == 0 && spoiled == "" && how == "full" {
						spoiled = keys[len(keys)-1]
						if err := st.Delete(ctx, spoiled); err != nil {
							t.Error(err)
						}
					}
				}})
				got := rows(t, func(env exec.Env) error { opts.Env = env; return Run(ctx, p, opts) })
				if !slices.Equal(got, want) {
					i := firstDiff(got, want)
					t.Fatalf("partitioned: %d rows, one process %d; first difference at %d", len(got), len(want), i)
				}
				if ran := strings.Join(logged, "\n"); !strings.Contains(ran, "scan a piece of the join's other side | write 12 parts by pu_location_id") ||
					!strings.Contains(ran, "read a part of every map object of both sides | join | write stream") {
					t.Fatalf("not a partitioned join: %q", logged)
				}
				if how == "full" && !slices.ContainsFunc(logged, func(l string) bool { return strings.Contains(l, "its committed output") }) {
					t.Errorf("the lost output of the other side was not made again: %q", logged)
				}
				if left := objects(t, jobs); len(left) != 0 {
					t.Fatalf("objects left: %q", left)
				}
			})
		}
	}
	t.Run("auto", func(t *testing.T) {
		for _, c := range []struct {
			how       string
			broadcast int64
			want      bool
		}{{"inner", 1 << 40, false}, {"inner", 1, true}, {"left", -1, true}, {"right", 1 << 40, true}, {"semi", 1 << 40, false}} {
			p := parsePlan(t, "scan "+taxi+" | join "+other+" --on do_location_id=pu_location_id --prefix o_ --how "+c.how)
			compiled, err := exec.Compile(p, exec.Env{})
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{PieceBytes: 64 << 20, Broadcast: c.broadcast, Workers: 2}.withDefaults()
			pl, err := makePlan(context.Background(), p, compiled, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := pl.phases[0].Other != 0; got != c.want || got && (len(pl.phases) != 3 || pl.phases[2].Build != 1) {
				t.Errorf("%s join, broadcast %d: partitioned %v, want %v (%+v)", c.how, c.broadcast, got, c.want, pl.phases)
			}
		}
		// Forced, a side that is not a scan and per-batch stages is refused.
		p := parsePlan(t, "scan "+taxi+" | join (scan "+taxi+" | count-by pu_location_id) --on do_location_id=pu_location_id --prefix o_")
		compiled, _ := exec.Compile(p, exec.Env{})
		_, err := makePlan(context.Background(), p, compiled, Options{PieceBytes: 64 << 20, Join: JoinPartitioned, Workers: 2})
		if err == nil || !strings.Contains(err.Error(), "must be a scan and per-batch stages") {
			t.Errorf("a partitioned join of an aggregation: %v", err)
		}
	})
}

func parsePlan(t *testing.T, text string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPartitionedJoinHotKey: a reducer whose part of the other side its
// join cannot hold however it splits it fails the job at its first
// attempt, in one line that says so, and leaves nothing.
func TestPartitionedJoinHotKey(t *testing.T) {
	taxi := testData(t)
	p := parsePlan(t, "scan "+taxi+" --columns vendor_id,fare_amount | join (scan "+taxi+" --columns vendor_id,tip_amount) --on vendor_id --memory 4KiB --prefix o_")
	jobs := t.TempDir()
	opts := testOptions(jobs)
	opts.Join = JoinPartitioned
	err := Run(context.Background(), p, opts)
	if err == nil || !strings.Contains(err.Error(), "a hot key?") || !strings.Contains(err.Error(), "failed 1 time(s)") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("got %v, want one line: a hot key, failed once", err)
	}
	if left := objects(t, jobs); len(left) != 0 {
		t.Fatalf("objects left: %q", left)
	}
}

// TestPartitionedJoinFloatSums: float sums after a partitioned join are
// one process's to the bit: the driver cuts the merged rows into the
// batches the join made in one process, stream batch by stream batch,
// then the right side's unmatched rows.
func TestPartitionedJoinFloatSums(t *testing.T) {
	taxi := testData(t)
	other := "(scan " + taxi + " --columns pu_location_id,tip_amount --filter 'trip_distance > 8 and passenger_count = 2')"
	for _, how := range []string{"inner", "left", "right", "full"} {
		t.Run(how, func(t *testing.T) {
			p := parsePlan(t, "scan "+taxi+" --columns do_location_id,fare_amount,payment_type | join "+other+
				" --on do_location_id=pu_location_id --how "+how+" --prefix o_ | agg-by payment_type 'sum(fare_amount), sum(o_tip_amount), count()'")
			want := rows(t, func(env exec.Env) error { return runLocal(p, env, exec.Options{}) })
			opts := testOptions(t.TempDir())
			opts.Join = JoinPartitioned
			got := rows(t, func(env exec.Env) error { opts.Env = env; return Run(context.Background(), p, opts) })
			if !slices.Equal(got, want) {
				t.Fatalf("partitioned:\n%q\none process:\n%q", got, want)
			}
		})
	}
}
