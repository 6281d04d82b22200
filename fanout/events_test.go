package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/internal/fanouthook"
	"github.com/sluice-data/sluice/plan"
)

// The event log of a shuffle job with a task that fails once: the job,
// each phase, every attempt with its outcome, and the rows that went
// through the shuffle on both sides of it.
func TestEventLog(t *testing.T) {
	taxi := testData(t)
	p := mustPlan(t, "S "+taxi)
	opts := testOptions(t.TempDir())
	opts.PieceBytes = 64 << 20 // a task per file
	local := opts.Executor.(*Local)
	local.Env = append(local.Env, fanouthook.EnvFail+"=0/1")
	var log bytes.Buffer
	opts.Events = &log
	rows(t, func(env exec.Env) error { opts.Env = env; return Run(context.Background(), p, opts) })

	var evs []Event
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) < 2 || evs[0].Type != EventJob || evs[len(evs)-1].Type != EventJobEnd {
		t.Fatalf("the log does not start with the job and end with its end:\n%s", log.String())
	}
	job := evs[0]
	if job.Version != EventVersion || len(job.PhaseList) != 2 || job.PhaseList[0] != (PhaseInfo{PhaseMap, 4}) || job.PhaseList[1] != (PhaseInfo{PhaseReduce, 5}) {
		t.Fatalf("job line %+v", job)
	}
	if evs[len(evs)-1].Error != "" {
		t.Fatalf("job_end has an error: %q", evs[len(evs)-1].Error)
	}
	committed := map[int]map[int]Event{0: {}, 1: {}}
	var failed []Event
	var phases, ends int
	for _, ev := range evs[1 : len(evs)-1] {
		switch ev.Type {
		case EventPhase:
			phases++
		case EventPhaseEnd:
			ends++
			if ev.Error != "" {
				t.Errorf("phase %d ended with %q", ev.Phase, ev.Error)
			}
		case EventAttempt:
			if ev.Worker == "" || ev.Start.IsZero() || ev.End.Before(ev.Start) {
				t.Errorf("attempt without a worker or times: %+v", ev)
			}
			switch ev.Outcome {
			case OutcomeCommitted:
				if _, dup := committed[ev.Phase][ev.Task]; dup {
					t.Errorf("phase %d task %d committed twice", ev.Phase, ev.Task)
				}
				committed[ev.Phase][ev.Task] = ev
			case OutcomeFailed:
				failed = append(failed, ev)
			default:
				t.Errorf("attempt %+v: outcome %q in a job without duplicates", ev, ev.Outcome)
			}
		default:
			t.Errorf("line of type %q", ev.Type)
		}
	}
	if phases != 2 || ends != 2 || len(committed[0]) != 4 || len(committed[1]) != 5 {
		t.Fatalf("%d phase lines, %d phase ends, committed %d map and %d reduce tasks; want 2, 2, 4, 5", phases, ends, len(committed[0]), len(committed[1]))
	}
	if len(failed) != 1 || failed[0].Phase != 0 || failed[0].Task != 1 || !strings.Contains(failed[0].Error, "injected failure") {
		t.Fatalf("failed attempts %+v; want map task 1's first", failed)
	}
	if a := committed[0][1].Attempt; !strings.HasPrefix(a, "a2-") {
		t.Errorf("map task 1 committed attempt %q, want its second", a)
	}
	var mapIn, mapOut, redIn int64
	for _, ev := range committed[0] {
		mapIn += ev.RowsIn
		mapOut += ev.RowsOut
		if ev.Piece == "" || ev.BytesIn <= 0 || ev.BytesOut <= 0 {
			t.Errorf("map attempt without its piece or bytes: %+v", ev)
		}
	}
	var redOut int64
	for _, ev := range committed[1] {
		redIn += ev.RowsIn
		redOut += ev.RowsOut
	}
	// The map tasks combine (count-by's partial side before the shuffle):
	// fewer rows go through the shuffle than were scanned.
	if mapIn != 24_000 || mapOut != redIn || mapOut <= 0 || mapOut >= mapIn {
		t.Errorf("rows: %d scanned, %d shuffled out, %d read by reducers; want 24000, then fewer, and as many read as shuffled", mapIn, mapOut, redIn)
	}
	// The reducers wrote a group a pickup date between them.
	dates := rows(t, func(env exec.Env) error {
		return runLocal(mustParse(t, "scan "+taxi+" --columns pickup_date | count-by pickup_date"), env, exec.Options{})
	})
	if redOut != int64(len(dates)) {
		t.Errorf("the reducers wrote %d rows, want one a pickup date: %d", redOut, len(dates))
	}
}

// A straggler's first attempt, stopped when its duplicate finished the
// phase, left no record: the executor's report of it is in the log.
func TestEventLogStoppedAttempt(t *testing.T) {
	taxi := testData(t)
	p := mustPlan(t, "S "+taxi)
	opts := testOptions(t.TempDir())
	opts.PieceBytes = 64 << 20 // a task per file
	local := opts.Executor.(*Local)
	local.Env = append(local.Env, fanouthook.EnvStraggle+"="+fanouthook.Straggle(0, 2, 30*time.Second))
	var log bytes.Buffer
	opts.Events = &log
	rows(t, func(env exec.Env) error { opts.Env = env; return Run(context.Background(), p, opts) })
	var task2 []Event
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var ev Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == EventAttempt && ev.Phase == 0 && ev.Task == 2 {
			task2 = append(task2, ev)
		}
	}
	if len(task2) != 2 {
		t.Fatalf("map task 2's attempts: %+v; want the straggler and its duplicate", task2)
	}
	stopped, won := task2[0], task2[1]
	if stopped.Outcome != OutcomeStopped || stopped.Attempt != "a1" || !strings.Contains(stopped.Worker, " pid ") || !stopped.End.After(stopped.Start) {
		t.Errorf("the straggler: %+v", stopped)
	}
	if won.Outcome != OutcomeCommitted || !strings.HasPrefix(won.Attempt, "a2-") || won.Start.Before(stopped.Start) {
		t.Errorf("the duplicate: %+v", won)
	}
}

func mustParse(t *testing.T, text string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
