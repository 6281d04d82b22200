package jobmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/jobmetrics"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/internal/fanouthook"
	"github.com/sluice-data/sluice/internal/metricstest"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/store"
)

// TestMain is also the test's worker process: the local executor runs
// this binary for each task.
func TestMain(m *testing.M) {
	if os.Getenv("JOBMETRICS_TEST_WORKER") != "" {
		os.Exit(worker())
	}
	goleak.VerifyTestMain(m)
}

func worker() int {
	t, err := fanout.TaskFromArgs(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 2
	}
	if err := fanout.RunTask(context.Background(), t, fanout.Env{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func newMetrics(t *testing.T) (*jobmetrics.Metrics, string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := jobmetrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobmetrics.New(reg); err == nil {
		t.Error("registered twice on one registry")
	}
	return m, metricstest.Serve(t, reg)
}

// TestJob drives a real job (a map phase, a shuffle, a reduce phase with
// one failed attempt) and checks the scraped counters against the job:
// every task done once, the failed attempt, both phases and the job done,
// the dataset's rows read by the map phase, and the gauges back to 0.
func TestJob(t *testing.T) {
	dir := t.TempDir()
	st, _, err := store.Open(context.Background(), dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = gen.Taxi(context.Background(), st, "taxi", gen.Options{Rows: 12_000, Files: 3, Seed: 3, RowGroupRows: 1000})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse("scan " + filepath.Join(dir, "taxi") + "/ --columns pickup_date,trip_distance | shuffle --by pickup_date --to 4 | sum-by pickup_date trip_distance")
	if err != nil {
		t.Fatal(err)
	}
	m, url := newMetrics(t)
	ex := fanout.NewLocal([]string{os.Args[0]})
	// The reducer 2's first attempt fails; its second is committed.
	ex.Env = []string{"JOBMETRICS_TEST_WORKER=1", fanouthook.EnvFail + "=1/2"}
	var mu sync.Mutex
	last := map[string]fanout.Progress{}
	// Observe: the job's reports reach the metrics and the Progress it had.
	opts := fanout.Options{
		Workers: 2, Store: filepath.Join(dir, "jobs"), PieceBytes: 1 << 10, Executor: ex,
		Env: exec.Env{Output: exec.Collect(nil, func(arrow.RecordBatch) error { return nil })},
		Progress: func(pr fanout.Progress) {
			mu.Lock()
			last[pr.Phase] = pr
			mu.Unlock()
		},
	}
	job := m.Observe(&opts)
	mid := metricstest.Scrape(t, url, nil)
	if v := mid.Get(t, "sluice_fanout_jobs_running"); v != 1 {
		t.Errorf("jobs running: %v, want 1", v)
	}
	err = fanout.Run(context.Background(), p, opts)
	job.Done(err)
	if err != nil {
		t.Fatal(err)
	}
	s := metricstest.Scrape(t, url, nil)
	mapTasks, reduceTasks := last[fanout.PhaseMap].Tasks, last[fanout.PhaseReduce].Tasks
	if mapTasks < 12 || reduceTasks != 4 {
		t.Fatalf("%d map and %d reduce tasks, want 12 or more and 4", mapTasks, reduceTasks)
	}
	for _, c := range []struct {
		name, phase string
		want        float64
	}{
		{"sluice_fanout_tasks_done_total", fanout.PhaseMap, float64(mapTasks)},
		{"sluice_fanout_tasks_done_total", fanout.PhaseReduce, 4},
		{"sluice_fanout_attempts_failed_total", fanout.PhaseMap, 0},
		{"sluice_fanout_attempts_failed_total", fanout.PhaseReduce, 1},
		{"sluice_fanout_phases_done_total", fanout.PhaseMap, 1},
		{"sluice_fanout_phases_done_total", fanout.PhaseReduce, 1},
		{"sluice_fanout_read_rows_total", fanout.PhaseMap, 12_000},
		{"sluice_fanout_read_rows_total", fanout.PhaseReduce, float64(last[fanout.PhaseReduce].RowsIn)},
		{"sluice_fanout_written_bytes_total", fanout.PhaseMap, float64(last[fanout.PhaseMap].BytesOut)},
	} {
		if v := s.Get(t, c.name, "phase", c.phase); v != c.want {
			t.Errorf("%s{phase=%q} = %v, want %v", c.name, c.phase, v, c.want)
		}
	}
	if s.Sum("sluice_fanout_written_bytes_total") == 0 || s.Sum("sluice_fanout_read_bytes_total") == 0 {
		t.Error("no bytes read or written")
	}
	if v := s.Sum("sluice_fanout_tasks") + s.Sum("sluice_fanout_phase_tasks") + s.Get(t, "sluice_fanout_jobs_running"); v != 0 {
		t.Errorf("gauges at the end sum to %v, want 0", v)
	}
	if ok, failed := s.Get(t, "sluice_fanout_jobs_total", "result", "ok"), s.Get(t, "sluice_fanout_jobs_total", "result", "failed"); ok != 1 || failed != 0 {
		t.Errorf("jobs ok %v, failed %v; want 1, 0", ok, failed)
	}
}

// TestReports feeds reports by hand: gauges of two jobs at once add up,
// a phase of the same kind after another starts anew, a count that goes
// back is not taken back, and a job's end takes it off the gauges.
func TestReports(t *testing.T) {
	m, url := newMetrics(t)
	a, b := m.Job(), m.Job()
	a.Progress(fanout.Progress{Phase: "map", Tasks: 10, Done: 2, Running: 3, Failed: 1, RowsIn: 100})
	b.Progress(fanout.Progress{Phase: "map", Tasks: 4, Done: 1, Running: 2})
	s := metricstest.Scrape(t, url, nil)
	for _, c := range []struct {
		v, want float64
		what    string
	}{
		{s.Get(t, "sluice_fanout_tasks", "phase", "map", "state", "running"), 5, "running"},
		{s.Get(t, "sluice_fanout_tasks", "phase", "map", "state", "done"), 3, "done"},
		{s.Get(t, "sluice_fanout_phase_tasks", "phase", "map"), 14, "phase tasks"},
		{s.Get(t, "sluice_fanout_tasks_done_total", "phase", "map"), 3, "done total"},
		{s.Get(t, "sluice_fanout_jobs_running"), 2, "jobs running"},
	} {
		if c.v != c.want {
			t.Errorf("two jobs: %s %v, want %v", c.what, c.v, c.want)
		}
	}
	// a: the executor's failed count goes back (1 to 0, then 2), its map
	// phase ends, a second map phase of as many tasks starts.
	a.Progress(fanout.Progress{Phase: "map", Tasks: 10, Done: 5, Running: 3, Failed: 0, RowsIn: 400})
	a.Progress(fanout.Progress{Phase: "map", Tasks: 10, Done: 10, Running: 0, Failed: 2, RowsIn: 1000})
	a.Progress(fanout.Progress{Phase: "map", Tasks: 10, Done: 10, Running: 0, Failed: 2, RowsIn: 1000}) // again
	a.Progress(fanout.Progress{Index: 1, Phase: "map", Tasks: 10, Done: 0, Running: 2})
	b.Done(errors.New("failed"))
	s = metricstest.Scrape(t, url, nil)
	for _, c := range []struct {
		v, want float64
		what    string
	}{
		{s.Get(t, "sluice_fanout_tasks", "phase", "map", "state", "running"), 2, "running"},
		{s.Get(t, "sluice_fanout_tasks", "phase", "map", "state", "done"), 0, "done"},
		{s.Get(t, "sluice_fanout_phase_tasks", "phase", "map"), 10, "phase tasks"},
		{s.Get(t, "sluice_fanout_tasks_done_total", "phase", "map"), 11, "done total"},
		{s.Get(t, "sluice_fanout_attempts_failed_total", "phase", "map"), 2, "failed attempts"},
		{s.Get(t, "sluice_fanout_phases_done_total", "phase", "map"), 1, "phases done"},
		{s.Get(t, "sluice_fanout_read_rows_total", "phase", "map"), 1000, "rows read"},
		{s.Get(t, "sluice_fanout_jobs_running"), 1, "jobs running"},
		{s.Get(t, "sluice_fanout_jobs_total", "result", "failed"), 1, "jobs failed"},
	} {
		if c.v != c.want {
			t.Errorf("after: %s %v, want %v", c.what, c.v, c.want)
		}
	}
	a.Progress(fanout.Progress{Index: 2, Phase: "reduce", Tasks: 3, Done: 1, Running: 2})
	a.Done(nil)
	a.Progress(fanout.Progress{Index: 2, Phase: "reduce", Tasks: 3, Done: 3}) // after the end: ignored
	s = metricstest.Scrape(t, url, nil)
	if v := s.Sum("sluice_fanout_tasks") + s.Sum("sluice_fanout_phase_tasks") + s.Get(t, "sluice_fanout_jobs_running"); v != 0 {
		t.Errorf("gauges after both jobs sum to %v, want 0", v)
	}
	if v := s.Get(t, "sluice_fanout_tasks_done_total", "phase", "reduce"); v != 1 {
		t.Errorf("reduce tasks done %v, want 1", v)
	}
	if v := s.Get(t, "sluice_fanout_jobs_total", "result", "ok"); v != 1 {
		t.Errorf("jobs ok %v, want 1", v)
	}
}
