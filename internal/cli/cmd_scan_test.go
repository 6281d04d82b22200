package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/sluice-data/sluice/internal/await"
	"github.com/sluice-data/sluice/s3server"
)

// tally is what the scan tests compare outputs by: order-insensitive,
// since batches are written in the order they are decoded.
type tally struct {
	rows, keys, commentBytes int64
}

func (t *tally) add(rec arrow.RecordBatch) {
	t.rows += rec.NumRows()
	if idx := rec.Schema().FieldIndices("l_orderkey"); len(idx) > 0 {
		for _, v := range rec.Column(idx[0]).(*array.Int64).Int64Values() {
			t.keys += v
		}
	}
	if idx := rec.Schema().FieldIndices("l_comment"); len(idx) > 0 {
		c := rec.Column(idx[0]).(*array.String)
		for i := 0; i < c.Len(); i++ {
			t.commentBytes += int64(len(c.Value(i)))
		}
	}
}

// lineitemDir generates a small lineitem dataset with the CLI.
func lineitemDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lineitem")
	r := sluice(t, nil, "gen", "lineitem", "--rows", "30000", "--files", "3", "--out", dir, "-q")
	if r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	return dir
}

// referenceTally reads the dataset's files with arrow-go and tallies the
// rows whose l_orderkey is below maxKey.
func referenceTally(t *testing.T, dir string, maxKey int64) tally {
	t.Helper()
	var out tally
	files, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(nil), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		tr := array.NewTableReader(tbl, 1<<20)
		for tr.Next() {
			rec := tr.RecordBatch()
			keys := rec.Column(rec.Schema().FieldIndices("l_orderkey")[0]).(*array.Int64)
			comments := rec.Column(rec.Schema().FieldIndices("l_comment")[0]).(*array.String)
			for i := 0; i < int(rec.NumRows()); i++ {
				if keys.Value(i) < maxKey {
					out.rows++
					out.keys += keys.Value(i)
					out.commentBytes += int64(len(comments.Value(i)))
				}
			}
		}
		tr.Release()
		tbl.Release()
	}
	return out
}

func tallyIPCStream(t *testing.T, data []byte) tally {
	t.Helper()
	r, err := ipc.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("IPC stream: %v", err)
	}
	defer r.Release()
	var out tally
	for r.Next() {
		out.add(r.RecordBatch())
	}
	if err := r.Err(); err != nil {
		t.Fatalf("IPC stream: %v", err)
	}
	return out
}

func tallyFile(t *testing.T, path string) tally {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out tally
	switch {
	case strings.HasSuffix(path, ".arrow"):
		r, err := ipc.NewFileReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("IPC file: %v", err)
		}
		defer r.Close()
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordBatch(i)
			if err != nil {
				t.Fatal(err)
			}
			out.add(rec)
		}
	case strings.HasSuffix(path, ".arrows"):
		return tallyIPCStream(t, data)
	default:
		tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), parquet.NewReaderProperties(nil), pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("Parquet output: %v", err)
		}
		defer tbl.Release()
		tr := array.NewTableReader(tbl, 1<<20)
		defer tr.Release()
		for tr.Next() {
			out.add(tr.RecordBatch())
		}
	}
	return out
}

func TestScanCount(t *testing.T) {
	dir := lineitemDir(t)
	for _, args := range [][]string{
		{dir},
		{dir + "/"},
		{dir + "/*.parquet", "--concurrency", "1", "--batch-rows", "1000"},
		{"file://" + dir, "--columns", "l_shipmode"},
	} {
		r := sluice(t, nil, append([]string{"scan"}, args...)...)
		if r.code != 0 || r.stdout != "30000 rows\n" {
			t.Errorf("scan %v: %+v", args, r)
		}
	}
}

func TestScanOutputs(t *testing.T) {
	dir := lineitemDir(t)
	out := t.TempDir()
	want := referenceTally(t, dir, 20000)
	filter := []string{"--filter", "l_orderkey < 20000", "--columns", "l_comment,l_orderkey"}
	for _, name := range []string{"x.arrow", "x.arrows", "x.parquet", "sub/dir/y.parquet"} {
		dest := filepath.Join(out, name)
		r := sluice(t, nil, append([]string{"scan", dir, "-o", dest, "--batch-rows", "3000"}, filter...)...)
		if r.code != 0 || r.stdout != "" {
			t.Fatalf("-o %s: %+v", name, r)
		}
		if got := tallyFile(t, dest); got != want {
			t.Errorf("-o %s: %+v, want %+v", name, got, want)
		}
	}
	r := sluice(t, nil, append([]string{"scan", dir, "-o", "-"}, filter...)...)
	if r.code != 0 {
		t.Fatalf("-o -: %+v", r)
	}
	if got := tallyIPCStream(t, []byte(r.stdout)); got != want {
		t.Errorf("-o -: %+v, want %+v", got, want)
	}
	// An empty result is still a valid file with the schema.
	empty := filepath.Join(out, "empty.arrow")
	r = sluice(t, nil, "scan", dir, "--filter", "l_orderkey < 0", "-o", empty)
	if r.code != 0 {
		t.Fatalf("empty: %+v", r)
	}
	if got := tallyFile(t, empty); got.rows != 0 {
		t.Fatalf("empty: %+v", got)
	}
}

func TestScanStats(t *testing.T) {
	dir := lineitemDir(t)
	r := sluice(t, nil, "scan", dir, "--stats", "--sim", "ttfb=2ms,stream=400MiB/s,link=800MiB/s")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	for _, re := range []string{
		`scan: 30000 rows in \d+ batches \(30000 decoded\) from \d+ row groups of 3 files`,
		`MiB needed, [\d.]+ MiB fetched \([\d.]+x\) in \d+ requests`,
		`[\d.]+ MiB/s; decode .* per core\), decoders waited for bytes .*, consumer waited`,
		`fetch: \d+ units`,
		`link: [\d.]+ MiB/s of 800.0 MiB/s \(\d+% of the modelled link's capacity\)`,
	} {
		if !regexp.MustCompile(re).MatchString(r.stderr) {
			t.Errorf("--stats lacks %s:\n%s", re, r.stderr)
		}
	}
}

func TestScanBadInput(t *testing.T) {
	dir := lineitemDir(t)
	out := t.TempDir()
	bad := filepath.Join(out, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(filepath.Join(dir, "part-00000.parquet"))
	if err := os.WriteFile(filepath.Join(bad, "a.parquet"), good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "b.parquet"), good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(good)
	for i := 100; i < len(corrupt)/2; i += 7 {
		corrupt[i] ^= 0x3c
	}
	cdir := filepath.Join(out, "corrupt")
	_ = os.MkdirAll(cdir, 0o755)
	_ = os.WriteFile(filepath.Join(cdir, "c.parquet"), corrupt, 0o644)

	dest := filepath.Join(out, "dest")
	_ = os.MkdirAll(dest, 0o755)
	cases := []badInput{
		{"bad filter", []string{"scan", dir, "--filter", "l_orderkey <"}, exitUsage, `at position 13 of "l_orderkey <": expected a value, found the end`},
		{"filter on a missing column", []string{"scan", dir, "--filter", "nope = 1"}, exitUsage, `at position 1 of "nope = 1": no column "nope"`},
		{"filter type", []string{"scan", dir, "--filter", "l_shipdate < 5"}, exitUsage, "cannot compare a date with an integer"},
		{"not a date", []string{"scan", dir, "--filter", "l_shipdate < '1998-13-01'"}, exitUsage, "'1998-13-01' is not a date"},
		// The same mistake as in sluice run: a usage error.
		{"missing column", []string{"scan", dir, "--columns", "l_orderkey,nope"}, exitUsage, `no column "nope"`},
		{"no files", []string{"scan", filepath.Join(out, "nothing")}, exitNotFound, "nothing to read at"},
		{"bad output name", []string{"scan", dir, "-o", filepath.Join(dest, "x.txt")}, exitUsage, ".jsonl"},
		{"bad batch rows", []string{"scan", dir, "--batch-rows", "0"}, exitUsage, "--batch-rows"},
		{"bad memory", []string{"scan", dir, "--memory", "lots"}, exitUsage, "--memory"},
		{"truncated file", []string{"scan", bad, "-o", filepath.Join(dest, "x.parquet")}, exitError, "b.parquet: "},
		{"corrupt pages", []string{"scan", cdir, "-o", filepath.Join(dest, "y.arrow")}, exitError, "c.parquet: row group"},
		{"two arguments", []string{"scan", dir, dir}, exitUsage, "1 argument"},
	}
	assertBadInputs(t, nil, dest, cases)
}

func TestScanHelp(t *testing.T) {
	r := sluice(t, nil, "scan", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "--filter") {
		t.Fatalf("%+v", r)
	}
}

// TestScanS3 scans through the embedded S3 endpoint and writes Parquet
// back to it in parts.
func TestScanS3(t *testing.T) {
	dir := t.TempDir()
	srv, err := s3server.Start(context.Background(), dir, "127.0.0.1:0", s3server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := srv.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	env := append(srv.Env(), "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true")
	r := sluice(t, env, "gen", "lineitem", "--rows", "200000", "--files", "2", "--out", "s3://bkt/li/", "-q")
	if r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	want := referenceTally(t, filepath.Join(dir, "bkt", "li"), 1<<62)
	r = sluice(t, env, "scan", "s3://bkt/li/*.parquet", "--columns", "l_orderkey,l_comment", "-o", "s3://bkt/out/all.parquet",
		"--sim", "ttfb=2ms", "--stats")
	if r.code != 0 {
		t.Fatalf("scan: %+v", r)
	}
	if got := tallyFile(t, filepath.Join(dir, "bkt", "out", "all.parquet")); got != want {
		t.Fatalf("%+v, want %+v", got, want)
	}
	r = sluice(t, env, "scan", "s3://bkt/li", "--filter", "l_orderkey < 0")
	if r.code != 0 || r.stdout != "0 rows\n" {
		t.Fatalf("all pruned: %+v", r)
	}
	assertCleanFailure(t, sluice(t, env, "scan", "s3://bkt/nothing/"), exitNotFound, "nothing to read at s3://bkt/nothing/")
}

// Ctrl-C in the middle of a scan to a file: exit 130, no output left, and
// a stream on stdout ends without its end-of-stream marker.
func TestScanInterrupted(t *testing.T) {
	dir := lineitemDir(t)
	dest := t.TempDir()
	for _, out := range []string{filepath.Join(dest, "x.parquet"), "-"} {
		cmd := exec.Command(sluiceBin, "scan", dir, "-q", "--sim", "ttfb=5ms,stream=100KiB/s,link=200KiB/s", "--batch-rows", "500", "-o", out)
		stdout := &lockedBuffer{}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Into the read: its output has begun (the temporary file, or the
		// first batch on stdout); the modelled link keeps it far from its end.
		await.Until(t, "the scan's output to begin", func() bool {
			if out == "-" {
				return stdout.Len() > 0
			}
			entries, _ := os.ReadDir(dest)
			return len(entries) > 0
		})
		if code := interrupt(t, cmd, "scan"); code != exitInterrupt {
			t.Errorf("-o %s: exit %d, want %d (stderr %q)", out, code, exitInterrupt, stderr.String())
		}
		if out == "-" {
			// Whole batches went out as they were scanned; the stream
			// must not end with the end-of-stream marker, so a sluice
			// stage reading it fails (arrow-go's reader takes a stream
			// cut at a message boundary as complete).
			b := stdout.Bytes()
			if bytes.HasSuffix(b, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}) {
				t.Errorf("an interrupted stream on stdout ends with the end-of-stream marker (%d bytes)", len(b))
			}
			show := exec.Command(sluiceBin, "head", "1000000000")
			show.Stdin = bytes.NewReader(b)
			if outb, err := show.CombinedOutput(); err == nil {
				t.Errorf("sluice head read an interrupted stream as complete: %s", outb)
			}
		}
	}
	if entries, _ := os.ReadDir(dest); len(entries) != 0 {
		t.Errorf("an interrupted scan left %v behind", entries)
	}
}

// TestScanPipedEqualsFused: `sluice scan -o - | sluice STAGE` gives the
// bytes `sluice run 'scan | STAGE'` gives, for the order-sensitive stages
// (head, top and sort with ties, float sums) and count-by, in every
// --order on both sides, and every order gives the same bytes: small
// batches decoded by many workers at once arrive out of dataset order,
// and in arrival order only the positions each batch carries (and a
// per-batch stage passes on) let the stages restore it.
func TestScanPipedEqualsFused(t *testing.T) {
	dir := pipeData(t) // 3 files of 3 row groups each
	taxi, li := filepath.Join(dir, "taxi"), filepath.Join(dir, "lineitem")
	const front = " --batch-rows 700 --concurrency 8"
	cases := []struct {
		name, scan, stage string
	}{
		{"head", taxi + " --columns pickup_date,fare_amount,trip_distance", "head 1500"},
		{"top ties", taxi + " --columns passenger_count,fare_amount", "top 50 --by passenger_count"},
		{"agg-by float sums", li + " --columns l_returnflag,l_linestatus,l_extendedprice,l_discount,l_tax",
			"agg-by l_returnflag,l_linestatus 'sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) as charge, mean(l_discount) as disc'"},
		{"sort ties", taxi + " --columns passenger_count,fare_amount", "sort --by passenger_count --desc"},
		{"count-by", taxi + " --columns passenger_count", "count-by passenger_count"},
		// filter passes each batch's position on in arrival order.
		{"filter then head", taxi + " --columns pickup_date,fare_amount", "filter 'fare_amount > 20' | sluice head 700"},
	}
	for _, c := range cases {
		var first []byte // what the first order gave: every order gives it
		for _, order := range []string{"", " --order dataset", " --order arrival"} {
			t.Run(c.name+order, func(t *testing.T) {
				fusedStage := strings.ReplaceAll(c.stage, "| sluice ", "| ")
				fused, stderr, code := bash(t, "sluice run "+shellQuote("scan "+c.scan+front+order+" | "+fusedStage))
				if code != 0 || len(fused) == 0 {
					t.Fatalf("fused: exit %d, %d bytes: %s", code, len(fused), stderr)
				}
				if first == nil {
					first = fused
				} else if !bytes.Equal(fused, first) {
					t.Fatalf("fused gives other bytes than with the first order (%d and %d bytes)", len(fused), len(first))
				}
				for run := range 3 {
					piped, stderr, code := bash(t, "sluice scan "+c.scan+front+order+" -q -o - | sluice "+c.stage)
					if code != 0 {
						t.Fatalf("piped: exit %d: %s", code, stderr)
					}
					if !bytes.Equal(fused, piped) {
						t.Fatalf("run %d: piped and fused differ (%d and %d bytes)", run, len(piped), len(fused))
					}
				}
			})
		}
	}
}

// lockedBuffer is a bytes.Buffer a child process writes while the test
// reads its length.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Len()
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// interrupt sends Ctrl-C to a started command and returns its exit code
// once it has stopped; one still running 10 s later is killed and fails
// the test.
func interrupt(t *testing.T, cmd *exec.Cmd, what string) int {
	t.Helper()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("%s still running 10s after Ctrl-C", what)
	}
	return cmd.ProcessState.ExitCode()
}

// -o /dev/null writes the output and throws it away (to time a scan with
// its encoding), without the temporary name and rename every other
// output gets, which would replace the device.
func TestScanToDevNull(t *testing.T) {
	dir := t.TempDir()
	if r := sluice(t, nil, "gen", "taxi", "--rows", "5000", "--files", "1", "--out", dir+"/t", "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	for _, f := range []string{"", "parquet", "csv"} {
		args := []string{"scan", dir + "/t", "-o", os.DevNull}
		if f != "" {
			args = append(args, "--format", f)
		}
		if r := sluice(t, nil, args...); r.code != 0 {
			t.Errorf("%v: exit %d, %s", args, r.code, r.stderr)
		}
	}
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a device: %v %v", os.DevNull, fi, err)
	}
}
