package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/internal/atomicfile"
	"github.com/sluice-data/sluice/sim"
	"github.com/sluice-data/sluice/store"
)

// TestRunReport: the report says where and through which link, --out's
// records and --plot's PNG are saved whole and nothing else is left in
// their directory; --json is the Document.
func TestRunReport(t *testing.T) {
	st, _ := memStore(t)
	dir := t.TempDir()
	charts := &drawn{}
	out := Output{Records: filepath.Join(dir, "reqs.csv"), Plot: filepath.Join(dir, "bench.png"), Charts: charts, Sim: "ttfb=1ms"}
	var rep bytes.Buffer
	out.W = &rep
	cfg := Config{Sizes: []int64{256 << 10}, Concurrency: []int{2}, Objects: 5, Keep: true}
	if err := RunReport(testCtx(t), st, "scratch/", cfg, out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sluice bench mem://bench-test/scratch/sluice-bench-", "(link model: ttfb=1ms)\nput: 5 objects of 256KiB, concurrency 2",
		"get: 5 objects of 256KiB", "\nkept the objects under mem://bench-test/scratch/sluice-bench-"} {
		if !strings.Contains(rep.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, rep.String())
		}
	}
	f, err := os.Open(out.Records)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ReadRecords(f, "csv")
	f.Close()
	if err != nil || len(recs) != 10 {
		t.Errorf("records file: %d records, %v; want 10", len(recs), err)
	}
	img, err := os.ReadFile(out.Plot)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(img)); err != nil || charts.requests != 10 || charts.timeline != 0 {
		t.Errorf("plot: %v; drew %+v, want the 10 requests", err, charts)
	}
	if left, _ := os.ReadDir(dir); len(left) != 2 {
		t.Errorf("%s holds %d entries, want the two files", dir, len(left))
	}

	rep.Reset()
	out.JSON, out.Records, out.Plot = true, "", ""
	cfg.Keep, cfg.Sizes, cfg.Concurrency = false, []int64{64 << 10, 128 << 10}, []int{1, 3}
	if err := RunReport(testCtx(t), st, "scratch/", cfg, out); err != nil {
		t.Fatal(err)
	}
	var doc Document
	if err := json.Unmarshal(rep.Bytes(), &doc); err != nil {
		t.Fatalf("%v in %s", err, rep.String())
	}
	if !strings.HasPrefix(doc.URL, "mem://bench-test/scratch/sluice-bench-") || doc.Sim != "ttfb=1ms" || doc.Kept || len(doc.Phases) != 8 || doc.GeneratorMiBps <= 0 {
		t.Errorf("document %+v", doc)
	}
	for _, p := range doc.Phases {
		if p.Objects != 5 || p.SteadyMiBps <= 0 {
			t.Errorf("phase %+v", p)
		}
	}
}

// phaseCanceller cancels the run as its third phase starts.
type phaseCanceller struct {
	cancel context.CancelFunc
	n      int
}

func (c *phaseCanceller) PhaseStart(PhaseInfo) {
	if c.n++; c.n == 3 {
		c.cancel()
	}
}
func (c *phaseCanceller) Add(int64)               {}
func (c *phaseCanceller) PhaseEnd(Summary, error) {}

// TestRunReportInterrupted: Ctrl-C prints the phases measured so far and
// returns the cancellation; --json prints nothing.
func TestRunReportInterrupted(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		st, _ := memStore(t)
		ctx, cancel := context.WithCancel(testCtx(t))
		var rep bytes.Buffer
		cfg := Config{Sizes: []int64{64 << 10}, Concurrency: []int{4, 1}, Objects: 8, Observer: &phaseCanceller{cancel: cancel}}
		err := RunReport(ctx, st, "", cfg, Output{W: &rep, JSON: asJSON, Sim: "none"})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want canceled", err)
		}
		got := rep.String()
		if asJSON {
			if got != "" {
				t.Errorf("--json printed %q", got)
			}
			continue
		}
		if !strings.Contains(got, "(link model: none), interrupted: the phases measured so far") || strings.Count(got, "\nput ") != 2 || strings.Count(got, "\nget ") != 1 {
			t.Errorf("interrupted report:\n%s", got)
		}
	}
}

// TestRunReportFailedRequests: requests that failed for good fail the
// run, after its report. (It only writes, and keeps what it wrote: the
// deletes of a store that slows a third of all requests down fail too.)
func TestRunReportFailedRequests(t *testing.T) {
	p, err := sim.Parse("slowdown=0.3,seed=3")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(sim.Wrap(store.NewMemDriver(), p), "mem://failing/")
	var rep bytes.Buffer
	err = RunReport(testCtx(t), st, "", Config{Sizes: []int64{16 << 10}, Concurrency: []int{4}, Objects: 20, Attempts: 1, WriteOnly: true, Keep: true}, Output{W: &rep})
	if err == nil || !strings.Contains(err.Error(), "requests failed after retries") || !strings.Contains(rep.String(), "errors ") {
		t.Fatalf("err = %v, report:\n%s", err, rep.String())
	}
}

// TestRunWorkersReport: the report says what each worker did, the
// document gives each run's start skew in seconds, and the plot is the
// timeline.
func TestRunWorkersReport(t *testing.T) {
	st, inner := memStore(t)
	worker := Config{Sizes: []int64{128 << 10}, Concurrency: []int{2}, Objects: 3}
	launch := &inProcess{inner: inner, profile: mustProfile(t, "ttfb=1ms"), die: -1, cfg: worker}
	wcfg := WorkersConfig{Workers: []int{1, 2}, Worker: worker, StartDelay: 50 * time.Millisecond}
	dir := t.TempDir()
	var rep bytes.Buffer
	charts := &drawn{}
	out := Output{W: &rep, Plot: filepath.Join(dir, "timeline.png"), Charts: charts, Sim: "ttfb=1ms", Executor: "local"}
	if err := RunWorkersReport(testCtx(t), st, "", wcfg, launch, out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sluice bench mem://bench-test/sluice-bench-",
		" --workers 1,2 (executor local): 3 object(s) of 128KiB a worker, concurrency 2, each worker behind its own link (ttfb=1ms)\n",
		"per worker", "min/p50/max", "scaling (medians over 1 round(s)"} {
		if !strings.Contains(rep.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, rep.String())
		}
	}
	img, err := os.ReadFile(out.Plot)
	if err != nil {
		t.Fatal(err)
	}
	// The last round: 1 worker, then 2, each 3 puts and 3 gets.
	if _, err := png.Decode(bytes.NewReader(img)); err != nil || charts.timeline != 18 || charts.requests != 0 {
		t.Errorf("timeline: %v; drew %+v, want the last round's 18 requests", err, charts)
	}

	rep.Reset()
	out.JSON, out.Plot = true, ""
	if err := RunWorkersReport(testCtx(t), st, "", wcfg, launch, out); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		URL  string `json:"url"`
		Sim  string `json:"sim"`
		Runs []struct {
			Workers   int      `json:"workers"`
			StartSkew *float64 `json:"start_skew_s"`
			Get       struct {
				Objects int `json:"objects"`
			} `json:"get"`
		} `json:"runs"`
		Scaling []Scaling `json:"scaling"`
	}
	if err := json.Unmarshal(rep.Bytes(), &doc); err != nil {
		t.Fatalf("%v in %s", err, rep.String())
	}
	if !strings.HasPrefix(doc.URL, "mem://bench-test/sluice-bench-") || doc.Sim != "ttfb=1ms" || len(doc.Runs) != 2 || len(doc.Scaling) != 2 {
		t.Fatalf("document %s", rep.String())
	}
	for i, r := range doc.Runs {
		if r.Workers != i+1 || r.Get.Objects != 3*(i+1) || r.StartSkew == nil || *r.StartSkew < 0 || *r.StartSkew > 5 {
			t.Errorf("run %d: %+v", i, r)
		}
	}
}

// TestRunWorker: a worker writes under its own prefix of the run's, with
// its own bytes, and leaves its records where the driver reads them,
// also when cancelled part way.
func TestRunWorker(t *testing.T) {
	st, _ := memStore(t)
	rs, _ := memStore(t)
	cfg := Config{Sizes: []int64{64 << 10}, Concurrency: []int{2}, Objects: 3, Keep: true}
	if err := RunWorker(testCtx(t), st, "run/", 2, cfg, rs, "records/"); err != nil {
		t.Fatal(err)
	}
	recs, err := WorkerRecords(testCtx(t), rs, "records/", 2)
	if err != nil || len(recs) != 6 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if !strings.HasPrefix(r.Key, "run/w002/sluice-bench-") || !r.OK() {
			t.Errorf("record %+v", r)
		}
	}
	// Worker 2 of seed 1 writes the bytes of seed 3.
	got, err := st.ReadAll(testCtx(t), recs[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, len(got))
	NewPayload(3).Fill(want, uint64(recs[0].Object), 0)
	if !bytes.Equal(got, want) {
		t.Error("worker 2's object is not seed 3's bytes")
	}

	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	cfg = Config{Sizes: []int64{1 << 20}, Concurrency: []int{2}, Objects: 40, Observer: &cancelOnBytes{cancel: cancel}}
	if err := RunWorker(ctx, st, "run/", 0, cfg, rs, "records/"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled worker: %v", err)
	}
	if recs, err := WorkerRecords(testCtx(t), rs, "records/", 0); err != nil || len(recs) == 0 {
		t.Errorf("cancelled worker left %d records, %v", len(recs), err)
	}
}

func TestPredictFrom(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "run.csv")
	if err := atomicfile.Write(name, func(w io.Writer) error { return WriteRecords(w, "csv", synthetic(0, 4, 10, 2)) }); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := PredictFrom(&b, name, PredictConfig{Workers: []int{100, 2000}}, true); err != nil {
		t.Fatal(err)
	}
	var doc PredictionDocument
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Measured) != 2 || doc.Measured[0].Processes != 4 || len(doc.Predictions) != 4 || doc.Predictions[3].Workers != 2000 {
		t.Errorf("document %s", b.String())
	}
	b.Reset()
	if err := PredictFrom(&b, name, PredictConfig{Workers: []int{100}}, false); err != nil || !strings.Contains(b.String(), "prefixes needed") {
		t.Errorf("table %v:\n%s", err, b.String())
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"kind":"put","start":3,"last_byte":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{bad: bad + ": records line 1: last_byte 1s is before start 3s", filepath.Join(dir, "r.txt"): "want a .jsonl or .csv name",
		filepath.Join(dir, "none.csv"): "none.csv: no such file"} {
		if err := PredictFrom(&b, file, PredictConfig{Workers: []int{1}}, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", file, err, want)
		}
	}
}

// Pods and array tasks get seconds to start; processes of this machine
// (and workers in this process) a fraction of one.
func TestDefaultStartDelay(t *testing.T) {
	counts := []int{1, 8, 4}
	for _, c := range []struct {
		launch Launcher
		want   time.Duration
	}{
		{&ExecLauncher{Exe: &fakeArray{}}, 10*time.Second + 800*time.Millisecond},
		{&ExecLauncher{Exe: fanout.NewLocal(nil)}, 600 * time.Millisecond},
		{&inProcess{}, 600 * time.Millisecond},
	} {
		if got := defaultStartDelay(c.launch, counts, 4); got != c.want {
			t.Errorf("%T: %v, want %v", c.launch, got, c.want)
		}
	}
}

func TestOutputCheck(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		out  Output
		want string
	}{
		{Output{}, ""},
		{Output{Records: filepath.Join(dir, "r.jsonl"), Plot: filepath.Join(dir, "p.PNG"), Charts: &drawn{}}, ""},
		{Output{Plot: filepath.Join(dir, "p.png")}, "no Charts"},
		{Output{Records: filepath.Join(dir, "r.txt")}, ".jsonl"},
		{Output{Plot: filepath.Join(dir, "p.svg")}, ".png"},
		{Output{Records: filepath.Join(dir, "no", "r.csv")}, "does not exist"},
	} {
		err := c.out.Check()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.out, err, c.want)
		}
	}
}

// drawn is Charts that counts the records it is given and draws a
// one-pixel PNG: bench/chart's tests draw real ones.
type drawn struct{ requests, timeline int }

func (d *drawn) Requests(w io.Writer, recs []Record) error {
	d.requests += len(recs)
	return png.Encode(w, image.NewGray(image.Rect(0, 0, 1, 1)))
}

func (d *drawn) Timeline(w io.Writer, recs []Record) error {
	d.timeline += len(recs)
	return png.Encode(w, image.NewGray(image.Rect(0, 0, 1, 1)))
}
