// Package jobmetrics exposes fanned-out jobs (package fanout) as
// Prometheus metrics: the tasks of each running phase by state, and
// counters of tasks done, failed attempts, phases and jobs done, and the
// rows and bytes the committed attempts read and wrote. It is fed by
// fanout.Options.Progress and by the job's end, nothing else: it sees what
// the driver's progress reports, as often as they come.
//
// A phase is labelled by its kind (fanout.PhaseMap, fanout.PhaseReduce),
// so labels are bounded whatever the job; a report of another phase
// (Progress.Index) starts that phase.
//
// What it is not: the event log (fanout.Options.Events) that records
// every attempt; nor a view of the workers' own processes.
package jobmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-data/sluice/fanout"
)

// Metrics are the collectors of the jobs a process drives, registered
// once; each job reports through its own Job.
type Metrics struct {
	tasks       *prometheus.GaugeVec // phase, state
	phaseTasks  *prometheus.GaugeVec // phase
	done        *prometheus.CounterVec
	failed      *prometheus.CounterVec
	phasesDone  *prometheus.CounterVec
	rowsIn      *prometheus.CounterVec
	bytesIn     *prometheus.CounterVec
	rowsOut     *prometheus.CounterVec
	bytesOut    *prometheus.CounterVec
	jobsRunning prometheus.Gauge
	jobs        *prometheus.CounterVec // result
}

// New registers the collectors on reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"phase"})
	}
	m := &Metrics{
		tasks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_fanout_tasks",
			Help: "Tasks of the phases running now, by phase kind and state: running (attempts running, a straggler's duplicate too) and done.",
		}, []string{"phase", "state"}),
		phaseTasks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sluice_fanout_phase_tasks",
			Help: "Tasks of the phases running now, all of them, by phase kind.",
		}, []string{"phase"}),
		done:       counter("sluice_fanout_tasks_done_total", "Tasks done (an attempt committed), by phase kind."),
		failed:     counter("sluice_fanout_attempts_failed_total", "Task attempts that failed (each retried until the attempts run out), by phase kind."),
		phasesDone: counter("sluice_fanout_phases_done_total", "Phases whose every task is done, by phase kind."),
		rowsIn:     counter("sluice_fanout_read_rows_total", "Rows the committed attempts read, by phase kind."),
		bytesIn:    counter("sluice_fanout_read_bytes_total", "Bytes the committed attempts read, by phase kind."),
		rowsOut:    counter("sluice_fanout_written_rows_total", "Rows the committed attempts wrote, by phase kind."),
		bytesOut:   counter("sluice_fanout_written_bytes_total", "Bytes the committed attempts wrote, by phase kind."),
		jobsRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_fanout_jobs_running",
			Help: "Jobs being driven.",
		}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_fanout_jobs_total",
			Help: "Jobs ended, by result (ok, failed).",
		}, []string{"result"}),
	}
	for _, c := range []prometheus.Collector{m.tasks, m.phaseTasks, m.done, m.failed, m.phasesDone,
		m.rowsIn, m.bytesIn, m.rowsOut, m.bytesOut, m.jobsRunning, m.jobs} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range []string{"ok", "failed"} {
		m.jobs.WithLabelValues(r)
	}
	return m, nil
}

// Job is one job's reports. Its methods are safe for concurrent use.
type Job struct {
	m      *Metrics
	mu     sync.Mutex
	has    bool            // a phase has reported
	cur    fanout.Progress // the running phase's last report
	high   fanout.Progress // the most counted of each of its counts
	shown  fanout.Progress // what it adds to the gauges now
	ended  bool            // its every task is done: counted, off the gauges
	closed bool
}

// Job starts counting a job; call Done when it ends.
func (m *Metrics) Job() *Job {
	m.jobsRunning.Inc()
	return &Job{m: m}
}

// Observe starts counting the job o runs: its Progress reports reach the
// Job as well as whatever they reached before. Call Done when it ends.
func (m *Metrics) Observe(o *fanout.Options) *Job {
	job := m.Job()
	if next := o.Progress; next != nil {
		o.Progress = func(pr fanout.Progress) {
			job.Progress(pr)
			next(pr)
		}
	} else {
		o.Progress = job.Progress
	}
	return job
}

// Progress takes a report of the job's running phase: it is a
// fanout.Options.Progress.
func (j *Job) Progress(pr fanout.Progress) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	if !j.has || pr.Index != j.cur.Index {
		j.unshow()
		j.has, j.ended = true, false
		j.high = fanout.Progress{}
		// The phase's counters are there from its start, at zero.
		for _, c := range []*prometheus.CounterVec{j.m.done, j.m.failed, j.m.phasesDone, j.m.rowsIn, j.m.bytesIn, j.m.rowsOut, j.m.bytesOut} {
			c.WithLabelValues(pr.Phase)
		}
	}
	j.cur = pr
	m, ph := j.m, pr.Phase
	// Counters take what a report adds to the most counted so far: an
	// executor's count that goes back (a cluster forgetting a failed
	// pod) is not taken back.
	add := func(c *prometheus.CounterVec, high *int64, v int64) {
		if v > *high {
			c.WithLabelValues(ph).Add(float64(v - *high))
			*high = v
		}
	}
	done, failed := int64(j.high.Done), int64(j.high.Failed)
	add(m.done, &done, int64(pr.Done))
	add(m.failed, &failed, int64(pr.Failed))
	j.high.Done, j.high.Failed = int(done), int(failed)
	add(m.rowsIn, &j.high.RowsIn, pr.RowsIn)
	add(m.bytesIn, &j.high.BytesIn, pr.BytesIn)
	add(m.rowsOut, &j.high.RowsOut, pr.RowsOut)
	add(m.bytesOut, &j.high.BytesOut, pr.BytesOut)
	if j.ended {
		return
	}
	if pr.Tasks > 0 && pr.Done >= pr.Tasks {
		m.phasesDone.WithLabelValues(ph).Inc()
		j.unshow()
		j.ended = true
		return
	}
	j.show(pr)
}

// show makes the gauges hold pr for this job, in place of what they held.
func (j *Job) show(pr fanout.Progress) {
	m, ph := j.m, pr.Phase
	m.tasks.WithLabelValues(ph, "running").Add(float64(pr.Running - j.shown.Running))
	m.tasks.WithLabelValues(ph, "done").Add(float64(pr.Done - j.shown.Done))
	m.phaseTasks.WithLabelValues(ph).Add(float64(pr.Tasks - j.shown.Tasks))
	j.shown = fanout.Progress{Phase: ph, Tasks: pr.Tasks, Done: pr.Done, Running: pr.Running}
}

// unshow takes this job's share off the gauges.
func (j *Job) unshow() {
	if j.shown.Phase != "" {
		j.show(fanout.Progress{Phase: j.shown.Phase})
	}
}

// Done counts the job's end (err nil: ok) and takes its running phase
// off the gauges; later reports are ignored.
func (j *Job) Done(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return
	}
	j.closed = true
	j.unshow()
	result := "ok"
	if err != nil {
		result = "failed"
	}
	j.m.jobs.WithLabelValues(result).Inc()
	j.m.jobsRunning.Dec()
}
