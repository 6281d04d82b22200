package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/sluice-data/sluice/plan"
)

// pipeData generates small taxi and lineitem datasets for a test.
func pipeData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, ds := range []string{"taxi", "lineitem"} {
		r := sluice(t, nil, "gen", ds, "--rows", "40000", "--files", "3", "--row-group-rows", "5000", "--out", filepath.Join(dir, ds), "-q")
		if r.code != 0 {
			t.Fatalf("gen: %s", r.stderr)
		}
	}
	return dir
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// pipeline runs stages fused (sluice run) and piped (each stage its own
// sluice process, through bash pipes with pipefail), and returns both
// results' stdout.
func pipeline(t *testing.T, stages ...string) (fusedOut, pipedOut []byte) {
	t.Helper()
	fr := sluice(t, nil, "run", strings.Join(stages, " | "))
	if fr.code != 0 {
		t.Fatalf("fused %q: exit %d: %s", stages, fr.code, fr.stderr)
	}
	script := "sluice run " + shellQuote(stages[0])
	for _, s := range stages[1:] {
		script += " | sluice " + s
	}
	out, stderr, code := bash(t, script)
	if code != 0 {
		t.Fatalf("piped %s: exit %d: %s", script, code, stderr)
	}
	// By default adjacent stages hand batches off through shared memory;
	// with that off every pipe carries the plain stream: the same bytes
	// come out.
	for _, mode := range []string{"plain"} {
		other, stderr, code := bashEnv(t, []string{"SLUICE_PIPE=" + mode}, script)
		if code != 0 {
			t.Fatalf("piped, SLUICE_PIPE=%s %s: exit %d: %s", mode, script, code, stderr)
		}
		if !bytes.Equal(other, out) {
			t.Fatalf("piped %s: %d bytes by default, %d with SLUICE_PIPE=%s", script, len(out), len(other), mode)
		}
	}
	return []byte(fr.stdout), out
}

func bash(t *testing.T, script string) ([]byte, string, int) {
	t.Helper()
	return bashEnv(t, nil, script)
}

func bashEnv(t *testing.T, env []string, script string) ([]byte, string, int) {
	t.Helper()
	return runCmd(t, "", append(env, "PATH="+filepath.Dir(sluiceBin)+":"+os.Getenv("PATH")), "bash", "-o", "pipefail", "-c", script)
}

const queryBAggs = `'sum(l_quantity) as sum_qty, sum(l_extendedprice) as sum_base_price, sum(l_extendedprice * (1 - l_discount)) as sum_disc_price, sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as sum_charge, mean(l_quantity) as avg_qty, mean(l_extendedprice) as avg_price, mean(l_discount) as avg_disc, count() as count_order'`

// TestPipedEqualsFusedCLI: for every stage and both queries, separate
// sluice processes connected by pipes give the same bytes as sluice run.
func TestPipedEqualsFusedCLI(t *testing.T) {
	dir := pipeData(t)
	taxi, li := filepath.Join(dir, "taxi"), filepath.Join(dir, "lineitem")
	scanTaxi := "scan " + taxi + " --columns pickup_date,trip_distance,payment_type,passenger_count,fare_amount"
	csvPath := filepath.Join(dir, "sample.csv")
	if r := sluice(t, nil, "run", scanTaxi+" | head 5000 | write "+csvPath); r.code != 0 {
		t.Fatalf("write csv: %s", r.stderr)
	}
	sorted := filepath.Join(dir, "sorted")
	for i, f := range []string{"part-00000", "part-00001", "part-00002"} {
		_ = i
		r := sluice(t, nil, "run", "scan "+filepath.Join(taxi, f+".parquet")+" --columns fare_amount,trip_distance | sort --by fare_amount | write "+filepath.Join(sorted, f+".arrow"))
		if r.code != 0 {
			t.Fatalf("sorted part: %s", r.stderr)
		}
	}
	cases := map[string][]string{
		"select":       {scanTaxi, "select fare_amount,pickup_date"},
		"drop":         {scanTaxi, "drop payment_type"},
		"rename":       {scanTaxi, "rename fare_amount=fare,trip_distance=miles"},
		"filter":       {scanTaxi, `filter "trip_distance > 2 and payment_type = 'card' and pickup_date >= date '2023-06-01'"`},
		"sum-by":       {scanTaxi, "sum-by pickup_date trip_distance,fare_amount"},
		"agg-by":       {"scan " + li, `agg-by l_shipmode "min(l_shipdate), max(l_quantity), mean(l_tax), count()"`},
		"count-by":     {scanTaxi, "count-by payment_type,passenger_count"},
		"sort":         {scanTaxi, "sort --by payment_type,fare_amount:desc --memory 1MiB"},
		"top":          {scanTaxi, "top 17 --by fare_amount --desc"},
		"head":         {scanTaxi, "head 777"},
		"merge":        {"merge --by fare_amount " + sorted + "/", "head 100000"},
		"from-csv":     {"from-csv " + csvPath, "count-by payment_type"},
		"to-csv":       {scanTaxi, "head 50", "to-csv"},
		"show":         {scanTaxi, "count-by payment_type", "show"},
		"query A":      {"scan " + taxi + " --columns pickup_date,trip_distance", "sum-by pickup_date trip_distance", "top 9 --by trip_distance --desc", "show"},
		"query B":      {"scan " + li + " --columns l_returnflag,l_linestatus,l_quantity,l_extendedprice,l_discount,l_tax,l_shipdate", `filter "l_shipdate <= date '1998-09-02'"`, "agg-by l_returnflag,l_linestatus " + queryBAggs, "show"},
		"query B dict": {"scan " + li + " --dict l_returnflag,l_linestatus --columns l_returnflag,l_linestatus,l_quantity,l_extendedprice,l_discount,l_tax,l_shipdate", `filter "l_shipdate <= date '1998-09-02'"`, "agg-by l_returnflag,l_linestatus " + queryBAggs, "show"},
		"dict to-csv":  {"scan " + li + " --dict l_shipmode,l_returnflag --columns l_shipmode,l_returnflag,l_quantity", `filter "l_returnflag != 'N'"`, "head 3000", "to-csv"},
	}
	for name, stages := range cases {
		t.Run(name, func(t *testing.T) {
			fused, piped := pipeline(t, stages...)
			if len(fused) == 0 {
				t.Fatal("no output")
			}
			if !bytes.Equal(fused, piped) {
				t.Fatalf("fused and piped differ (%d and %d bytes)\nfused: %.300q\npiped: %.300q", len(fused), len(piped), fused, piped)
			}
		})
	}
	// sluice scan -o - hands off to the stage after it as run's scan does,
	// every time, whichever process the scheduler runs first, and each
	// process does its own work.
	t.Run("scan -o -", func(t *testing.T) {
		fused, _ := pipeline(t, scanTaxi, "sum-by pickup_date trip_distance")
		script := "sluice " + scanTaxi + " -o - | sluice sum-by pickup_date trip_distance"
		trace := []string{"SLUICE_PIPE_TRACE=1"}
		for _, env := range [][]string{trace, trace, trace, {"SLUICE_PIPE=plain"}} {
			out, stderr, code := bashEnv(t, env, script)
			if code != 0 {
				t.Fatalf("%v %s: exit %d: %s", env, script, code, stderr)
			}
			if !bytes.Equal(out, fused) {
				t.Fatalf("%v %s: %d bytes, fused gives %d", env, script, len(out), len(fused))
			}
			if env[0] == "SLUICE_PIPE_TRACE=1" && !strings.Contains(stderr, "sum-by: read its input through shared memory") {
				t.Errorf("%s: no hand-off: %s", script, stderr)
			}
		}
	})
	// Sinks that write objects: the same objects.
	for _, sink := range []string{"write %s/out.parquet", "partition 4 --by payment_type --out %s/parts/"} {
		fdir, pdir := t.TempDir(), t.TempDir()
		if r := sluice(t, nil, "run", scanTaxi+" | "+strings.ReplaceAll(sink, "%s", fdir)); r.code != 0 {
			t.Fatalf("fused %s: %s", sink, r.stderr)
		}
		if _, stderr, code := bash(t, "sluice run "+shellQuote(scanTaxi)+" | sluice "+strings.ReplaceAll(sink, "%s", pdir)); code != 0 {
			t.Fatalf("piped %s: %s", sink, stderr)
		}
		n := 0
		filepath.Walk(fdir, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(fdir, p)
			a, _ := os.ReadFile(p)
			b, err := os.ReadFile(filepath.Join(pdir, rel))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s: %s differs piped (%v)", sink, rel, err)
			}
			n++
			return nil
		})
		if want := map[bool]int{true: 1, false: 4}[strings.HasPrefix(sink, "write")]; n != want {
			t.Errorf("%s: %d objects, want %d", sink, n, want)
		}
	}
}

// TestRunWriteArrowFile: `run '... | filter | write x.arrow'` stores the
// batches as the workers finish them, and the file reads back, batch by
// batch, as the piped stages' file (written in stream order) does.
func TestRunWriteArrowFile(t *testing.T) {
	dir := t.TempDir()
	taxi := filepath.Join(dir, "taxi")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "30000", "--files", "2", "--row-group-rows", "5000", "--out", taxi, "-q"); r.code != 0 {
		t.Fatalf("gen: %s", r.stderr)
	}
	scan := "scan " + taxi + " --batch-rows 700 --dict payment_type --columns pickup_date,payment_type,trip_distance,fare_amount"
	filter := `filter "trip_distance > 2 and payment_type != 'cash'"`
	fused, piped := filepath.Join(dir, "fused.arrow"), filepath.Join(dir, "piped.arrow")
	if r := sluice(t, nil, "run", "--threads", "4", scan+" | "+filter+" | select fare_amount,payment_type | write "+fused); r.code != 0 {
		t.Fatalf("fused: %s", r.stderr)
	}
	if _, stderr, code := bash(t, "sluice run "+shellQuote(scan)+" | sluice "+filter+" | sluice select fare_amount,payment_type | sluice write "+piped); code != 0 {
		t.Fatalf("piped: %s", stderr)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	got, want := readArrowFileBatches(t, mem, fused), readArrowFileBatches(t, mem, piped)
	defer releaseBatches(got)
	defer releaseBatches(want)
	if len(want) < 10 || len(got) != len(want) {
		t.Fatalf("fused file lists %d batches, piped %d", len(got), len(want))
	}
	for i := range got {
		if !array.RecordEqual(got[i], want[i]) {
			t.Fatalf("batch %d differs between the fused and the piped file", i)
		}
	}
}

func readArrowFileBatches(t *testing.T, mem memory.Allocator, path string) []arrow.RecordBatch {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := ipc.NewFileReader(bytes.NewReader(b), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer rd.Close()
	var out []arrow.RecordBatch
	for i := range rd.NumRecords() {
		rec, err := rd.RecordBatch(i)
		if err != nil {
			t.Fatalf("%s: batch %d: %v", path, i, err)
		}
		rec.Retain()
		out = append(out, rec)
	}
	return out
}

func releaseBatches(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func TestPipelineBadInput(t *testing.T) {
	dir := pipeData(t)
	taxi := filepath.Join(dir, "taxi")
	cases := []struct {
		name    string
		args    []string
		code    int
		mention string
	}{
		{"missing column", []string{"run", "scan " + taxi + " | sum-by nope trip_distance"}, exitUsage, `sum-by: no column "nope"`},
		{"wrong type", []string{"run", "scan " + taxi + " | sum-by pickup_date payment_type"}, exitUsage, `sum-by: cannot take the sum of column "payment_type"`},
		{"bad expression", []string{"run", "scan " + taxi + ` | filter "trip_distance > (1 + )"`}, exitUsage, "at position 22"},
		{"unknown stage", []string{"run", "scan " + taxi + " | frobnicate"}, exitUsage, `unknown stage "frobnicate"`},
		{"source not first", []string{"run", "scan " + taxi + " | scan " + taxi}, exitUsage, "first stage"},
		{"sink not last", []string{"run", "scan " + taxi + " | show | head 1"}, exitUsage, "last stage"},
		{"unquoted", []string{"run", "scan " + taxi + ` | filter "x`}, exitUsage, "unterminated"},
		{"bad flag", []string{"run", "scan " + taxi + " | top 3 --bye x"}, exitUsage, "unknown flag"},
		{"no data", []string{"run", "scan " + filepath.Join(dir, "nothing") + " | show"}, exitNotFound, "nothing to read at"},
		{"dict not read", []string{"run", "scan " + taxi + " --columns trip_distance --dict payment_type | show"}, exitUsage, `--dict names "payment_type", which is not among the columns read`},
		{"dict of numbers", []string{"run", "scan " + taxi + " --dict trip_distance | show"}, exitUsage, `--dict names "trip_distance", a float64 column`},
		{"stage bad expression", []string{"filter", "a >"}, exitUsage, "at position 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertCleanFailure(t, sluice(t, nil, c.args...), c.code, c.mention)
		})
	}
	// A broken stream is an error, not a short result.
	_, stderr, code := bash(t, "sluice run "+shellQuote("scan "+taxi)+" | head -c 300000 | sluice count-by payment_type")
	if code != 1 || !strings.Contains(stderr, "broken Arrow IPC stream") {
		t.Errorf("truncated stream: exit %d, %q", code, stderr)
	}
	// A corrupt stream (a message claiming 2 GiB of metadata; one whose
	// schema is cut) is one line and exit 1, not a crash or an allocation.
	for _, in := range []string{`\xff\xff\xff\xff\x00\x00\x00\x7f`, `\xff\xff\xff\xff\x10\x00\x00\x00\x0c\x00\x00\x00\x08\x00\x0c\x00`} {
		out, stderr, code := bash(t, "printf '"+in+"' | sluice count-by payment_type")
		if code != 1 || len(out) != 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "not an Arrow IPC stream") {
			t.Errorf("corrupt stream %s: exit %d, out %q, stderr %q", in, code, out, stderr)
		}
	}
	// A failing stage fails the pipeline, and the stage after it fails
	// too rather than printing an empty result, through shared memory or
	// a plain pipe: the source says why, the reader that its input ended
	// before a stream began.
	failing := "sluice run " + shellQuote("scan "+filepath.Join(dir, "nothing")) + " | sluice show"
	for _, mode := range []string{"", "plain"} {
		out, stderr, code := bashEnv(t, []string{"SLUICE_PIPE=" + mode}, failing)
		if code == 0 || len(out) != 0 || !strings.Contains(stderr, "nothing to read at") || !strings.Contains(stderr, "expected an Arrow IPC stream") {
			t.Errorf("failed source, SLUICE_PIPE=%s: exit %d, out %q, %q", mode, code, out, stderr)
		}
	}
	// head downstream stops the stages before it early, without error.
	out, stderr, code := bash(t, "sluice run "+shellQuote("scan "+taxi)+" | sluice head 3 | sluice select pickup_date | sluice to-csv")
	if code != 0 || strings.Count(string(out), "\n") != 4 {
		t.Errorf("head: exit %d, out %q, %q", code, out, stderr)
	}
}

func TestStageHelp(t *testing.T) {
	commands := []string{"run"}
	for _, d := range plan.Defs() {
		if d.Command {
			commands = append(commands, d.Name)
		}
	}
	assertExamples(t, commands...)
}
