package jobmetrics_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/fanout/jobmetrics"
)

// Register the collectors, feed a job's progress reports as a driver's
// fanout.Options.Progress would (Observe wires that up), and read the
// gauges and counters back from the registry a /metrics handler serves.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	m, err := jobmetrics.New(reg)
	if err != nil {
		log.Fatal(err)
	}
	job := m.Job()
	job.Progress(fanout.Progress{Phase: fanout.PhaseMap, Tasks: 8, Done: 3, Running: 2, Failed: 1, RowsIn: 30_000})
	show(reg, "running:", "sluice_fanout_tasks", "sluice_fanout_jobs_running")

	job.Progress(fanout.Progress{Phase: fanout.PhaseMap, Tasks: 8, Done: 8, Failed: 1, RowsIn: 80_000})
	job.Done(nil)
	show(reg, "done:", "sluice_fanout_tasks_done_total", "sluice_fanout_read_rows_total", "sluice_fanout_jobs_total", "sluice_fanout_jobs_running")
	// Output:
	// running:
	//   sluice_fanout_tasks{phase="map",state="done"} 3
	//   sluice_fanout_tasks{phase="map",state="running"} 2
	//   sluice_fanout_jobs_running{} 1
	// done:
	//   sluice_fanout_tasks_done_total{phase="map"} 8
	//   sluice_fanout_read_rows_total{phase="map"} 80000
	//   sluice_fanout_jobs_total{result="failed"} 0
	//   sluice_fanout_jobs_total{result="ok"} 1
	//   sluice_fanout_jobs_running{} 0
}

// show prints the samples of the named metrics, as name{labels} value.
func show(reg *prometheus.Registry, title string, names ...string) {
	fmt.Println(title)
	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range names {
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, s := range f.GetMetric() {
				var labels []string
				for _, l := range s.GetLabel() {
					labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				fmt.Printf("  %s{%s} %v\n", name, strings.Join(labels, ","), value(s))
			}
		}
	}
}

func value(s *dto.Metric) float64 {
	switch {
	case s.GetGauge() != nil:
		return s.GetGauge().GetValue()
	case s.GetCounter() != nil:
		return s.GetCounter().GetValue()
	}
	return 0
}
