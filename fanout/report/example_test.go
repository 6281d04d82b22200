package report_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/sluice-data/sluice/fanout/report"
)

// eventLog is what sluice run --workers 2 --events FILE writes for a job
// of two map tasks (task 1 failing once) and one reducer.
const eventLog = `{"type":"job","time":"2026-12-06T10:00:00Z","version":1,"job":"file:///jobs/job-1/","plan":"scan x | shuffle --by k --to 1 | sum-by k v","workers":2,"phases":[{"kind":"map","tasks":2},{"kind":"reduce","tasks":1}]}
{"type":"phase","time":"2026-12-06T10:00:00.010Z","phase":0,"kind":"map","tasks":2}
{"type":"attempt","time":"2026-12-06T10:00:00.300Z","phase":0,"kind":"map","task":0,"attempt":"a1-x","worker":"a pid 1","start":"2026-12-06T10:00:00.020Z","end":"2026-12-06T10:00:00.300Z","outcome":"committed","rows_in":1000,"bytes_in":1048576,"rows_out":1000,"bytes_out":524288}
{"type":"attempt","time":"2026-12-06T10:00:00.120Z","phase":0,"kind":"map","task":1,"attempt":"a1-y","worker":"b pid 2","start":"2026-12-06T10:00:00.020Z","end":"2026-12-06T10:00:00.120Z","outcome":"failed","error":"read timeout"}
{"type":"attempt","time":"2026-12-06T10:00:00.420Z","phase":0,"kind":"map","task":1,"attempt":"a2-w","worker":"b pid 3","start":"2026-12-06T10:00:00.130Z","end":"2026-12-06T10:00:00.420Z","outcome":"committed","rows_in":1000,"bytes_in":1048576,"rows_out":1000,"bytes_out":524288}
{"type":"phase_end","time":"2026-12-06T10:00:00.430Z","phase":0,"kind":"map","tasks":2}
{"type":"phase","time":"2026-12-06T10:00:00.440Z","phase":1,"kind":"reduce","tasks":1}
{"type":"attempt","time":"2026-12-06T10:00:00.600Z","phase":1,"kind":"reduce","task":0,"attempt":"a1-v","worker":"a pid 4","start":"2026-12-06T10:00:00.450Z","end":"2026-12-06T10:00:00.600Z","outcome":"committed","rows_in":2000,"bytes_in":1048576,"rows_out":7,"bytes_out":1000}
{"type":"phase_end","time":"2026-12-06T10:00:00.610Z","phase":1,"kind":"reduce","tasks":1}
{"type":"job_end","time":"2026-12-06T10:00:00.620Z"}
`

// Read a job's event log and print the summary sluice report draws:
// per phase, the retried tasks, and per timeline lane. render.WriteHTML
// and render.WritePNG draw the same report.
func ExampleRead() {
	rep, err := report.Read(strings.NewReader(eventLog))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("job %s ran %v: %s\n", rep.Job.Job, rep.Finish().Sub(rep.Start()), rep.Job.Plan)
	for _, p := range rep.Phases {
		fmt.Printf("phase %d (%s): %d tasks, %d attempts, %d committed, %d failed, rows in %d out %d, wall %v\n",
			p.Index, p.Kind, p.Tasks, p.Attempts, p.Committed, p.Failed, p.RowsIn, p.RowsOut, p.Wall())
	}
	for _, r := range rep.Retried {
		fmt.Printf("retried: phase %d task %d: %s %q\n", r.Phase, r.Task, strings.Join(r.Outcomes, ", "), r.Errors)
	}
	for _, l := range rep.Lanes {
		fmt.Printf("lane %s: %d attempts, %d committed, busy %v\n", l.Name, l.Attempts, l.Committed, l.Busy)
	}
	// Output:
	// job file:///jobs/job-1/ ran 620ms: scan x | shuffle --by k --to 1 | sum-by k v
	// phase 0 (map): 2 tasks, 3 attempts, 2 committed, 1 failed, rows in 2000 out 2000, wall 420ms
	// phase 1 (reduce): 1 tasks, 1 attempts, 1 committed, 0 failed, rows in 2000 out 7, wall 170ms
	// retried: phase 0 task 1: failed, committed ["read timeout"]
	// lane a #1: 2 attempts, 2 committed, busy 430ms
	// lane b #1: 2 attempts, 1 committed, busy 390ms
}
