// Package report reads a fanned-out job's event log (fanout.Options.Events)
// and sums it up: per phase, per task attempt, per worker and over time.
// Package report/render shows it: a timeline of every task attempt per
// worker, coloured by phase, with retries, duplicates and stragglers
// marked, the throughput over time, and a summary per phase and per
// worker; as one self-contained HTML page or a PNG.
package report

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/sluice-data/sluice/fanout"
)

// Report is a job as its event log tells it.
type Report struct {
	Job fanout.Event // the job line
	// End is the job_end line; zero when the log stops before the job
	// ended (a driver that died).
	End      fanout.Event
	Phases   []Phase
	Attempts []Attempt // in order of their start
	Lanes    []Lane
	// Retried are the tasks that took more than one attempt.
	Retried []Retried
}

// Phase sums a phase's attempts.
type Phase struct {
	Index      int
	Kind       string
	Tasks      int
	Start, End time.Time
	Error      string
	Attempts   int
	Committed  int
	Failed     int
	Duplicates int // finished after another attempt of the task was committed
	Stopped    int // still running when the phase ended
	Stragglers int
	// What the committed attempts read and wrote.
	RowsIn, BytesIn, RowsOut, BytesOut int64
}

// Wall is how long the phase ran.
func (p Phase) Wall() time.Duration { return p.End.Sub(p.Start) }

// Attempt is one attempt's line, with its place in the timeline.
type Attempt struct {
	fanout.Event
	// Lane is the timeline row it is drawn on: its host's, one of as many
	// as ran there at once (Lanes[Lane]).
	Lane int
	// Straggler: it ran much longer than most of its phase's committed
	// attempts (twice their median and at least half a second, the
	// rule by which the local executor starts a duplicate).
	Straggler bool
}

// Lane is a row of the timeline: a worker slot of a host, on which
// attempts ran one after another.
type Lane struct {
	Name      string // host #k
	Host      string
	Attempts  int
	Committed int
	Busy      time.Duration
}

// Retried is a task that took more than one attempt.
type Retried struct {
	Phase, Task int
	Attempts    int
	Outcomes    []string // each attempt's, in order of start
	Errors      []string // the failed attempts' errors
}

// maxLine bounds one line of the log; a job line lists the plan, which
// is short, and attempt lines are a few hundred bytes.
const maxLine = 4 << 20

// Read reads an event log and sums it up. Errors name the line.
func Read(r io.Reader) (*Report, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	rep := &Report{}
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var ev fanout.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if err := rep.add(ev); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: longer than %d MiB", n+1, maxLine>>20)
		}
		return nil, err
	}
	if rep.Job.Type == "" {
		return nil, errors.New("no job line: not an event log of sluice run --workers")
	}
	rep.finish()
	return rep, nil
}

func (rep *Report) add(ev fanout.Event) error {
	if ev.Type != fanout.EventJob && rep.Job.Type == "" {
		return fmt.Errorf("a %q line before the job line: not an event log of sluice run --workers", ev.Type)
	}
	if ev.Time.IsZero() {
		return fmt.Errorf("a %q line without its time", ev.Type)
	}
	phase := func() (*Phase, error) {
		if ev.Phase < 0 || ev.Phase >= len(rep.Phases) {
			return nil, fmt.Errorf("phase %d: the job has %d", ev.Phase, len(rep.Phases))
		}
		return &rep.Phases[ev.Phase], nil
	}
	switch ev.Type {
	case fanout.EventJob:
		if rep.Job.Type != "" {
			return errors.New("a second job line")
		}
		if ev.Version != fanout.EventVersion {
			return fmt.Errorf("event log version %d: this sluice reads version %d", ev.Version, fanout.EventVersion)
		}
		if len(ev.PhaseList) == 0 || len(ev.PhaseList) > 64 {
			return fmt.Errorf("a job of %d phases", len(ev.PhaseList))
		}
		rep.Job = ev
		for i, ph := range ev.PhaseList {
			if ph.Tasks < 1 || ph.Tasks > 1<<24 {
				return fmt.Errorf("phase %d of %d tasks", i, ph.Tasks)
			}
			rep.Phases = append(rep.Phases, Phase{Index: i, Kind: ph.Kind, Tasks: ph.Tasks})
		}
	case fanout.EventPhase:
		ph, err := phase()
		if err != nil {
			return err
		}
		// A phase run again (a lost output made again) keeps its first start.
		if ph.Start.IsZero() || ev.Time.Before(ph.Start) {
			ph.Start = ev.Time
		}
	case fanout.EventPhaseEnd:
		ph, err := phase()
		if err != nil {
			return err
		}
		ph.End, ph.Error = ev.Time, ev.Error
	case fanout.EventAttempt:
		ph, err := phase()
		if err != nil {
			return err
		}
		if ev.Task < 0 || ev.Task >= ph.Tasks {
			return fmt.Errorf("task %d: phase %d has %d", ev.Task, ev.Phase, ph.Tasks)
		}
		if ev.Start.IsZero() || ev.End.IsZero() {
			return fmt.Errorf("phase %d task %d: an attempt without its start or end", ev.Phase, ev.Task)
		}
		if ev.End.Before(ev.Start) {
			// The two ends come from different clocks when the driver
			// stopped the attempt.
			ev.End = ev.Start
		}
		switch ev.Outcome {
		case fanout.OutcomeCommitted:
			ph.Committed++
			ph.RowsIn += ev.RowsIn
			ph.BytesIn += ev.BytesIn
			ph.RowsOut += ev.RowsOut
			ph.BytesOut += ev.BytesOut
		case fanout.OutcomeFailed:
			ph.Failed++
		case fanout.OutcomeDuplicate:
			ph.Duplicates++
		case fanout.OutcomeStopped:
			ph.Stopped++
		default:
			return fmt.Errorf("phase %d task %d: outcome %q", ev.Phase, ev.Task, ev.Outcome)
		}
		ph.Attempts++
		rep.Attempts = append(rep.Attempts, Attempt{Event: ev})
	case fanout.EventJobEnd:
		rep.End = ev
	default:
		return fmt.Errorf("a line of type %q", ev.Type)
	}
	return nil
}

// finish orders the attempts, puts them in lanes, and finds the
// stragglers and the retried tasks.
func (rep *Report) finish() {
	slices.SortStableFunc(rep.Attempts, func(a, b Attempt) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Phase, b.Phase), cmp.Compare(a.Task, b.Task))
	})
	for pi := range rep.Phases {
		ph := &rep.Phases[pi]
		var took []time.Duration
		for _, a := range rep.Attempts {
			if a.Phase == pi && a.Outcome == fanout.OutcomeCommitted {
				took = append(took, a.End.Sub(a.Start))
			}
		}
		if len(took) == 0 {
			continue
		}
		slices.Sort(took)
		slow := max(2*took[len(took)/2], 500*time.Millisecond)
		for i := range rep.Attempts {
			if a := &rep.Attempts[i]; a.Phase == pi && a.End.Sub(a.Start) > slow {
				a.Straggler = true
				ph.Stragglers++
			}
		}
	}
	// Lanes: on each host, an attempt takes the first of its lanes free
	// at its start, so each lane is a slot that ran attempts one at a
	// time.
	type lane struct {
		host string
		free time.Time
	}
	var lanes []lane
	for i := range rep.Attempts {
		a := &rep.Attempts[i]
		host := Host(a.Worker)
		a.Lane = -1
		k := 0
		for li, l := range lanes {
			if l.host != host {
				continue
			}
			k++
			if !l.free.After(a.Start) {
				a.Lane = li
				break
			}
		}
		if a.Lane < 0 {
			a.Lane = len(lanes)
			lanes = append(lanes, lane{host: host})
			rep.Lanes = append(rep.Lanes, Lane{Name: fmt.Sprintf("%s #%d", host, k+1), Host: host})
		}
		lanes[a.Lane].free = a.End
		l := &rep.Lanes[a.Lane]
		l.Attempts++
		l.Busy += a.End.Sub(a.Start)
		if a.Outcome == fanout.OutcomeCommitted {
			l.Committed++
		}
	}
	type taskKey struct{ phase, task int }
	byTask := map[taskKey]*Retried{}
	var order []taskKey
	for _, a := range rep.Attempts {
		k := taskKey{a.Phase, a.Task}
		r := byTask[k]
		if r == nil {
			r = &Retried{Phase: a.Phase, Task: a.Task}
			byTask[k] = r
			order = append(order, k)
		}
		r.Attempts++
		r.Outcomes = append(r.Outcomes, a.Outcome)
		if a.Error != "" {
			r.Errors = append(r.Errors, a.Error)
		}
	}
	slices.SortFunc(order, func(a, b taskKey) int { return cmp.Or(cmp.Compare(a.phase, b.phase), cmp.Compare(a.task, b.task)) })
	for _, k := range order {
		if r := byTask[k]; r.Attempts > 1 {
			rep.Retried = append(rep.Retried, *r)
		}
	}
}

// Host is the host part of a worker's name ("host pid 123"): the
// timeline's lanes are a host's.
func Host(worker string) string {
	if h, _, ok := strings.Cut(worker, " pid "); ok {
		return h
	}
	if worker == "" {
		return "unknown"
	}
	return worker
}

// Start is when the job started, the zero of the report's times.
func (rep *Report) Start() time.Time { return rep.Job.Time }

// Finish is when the job ended, or its last event when the log stops
// before.
func (rep *Report) Finish() time.Time {
	if !rep.End.Time.IsZero() {
		return rep.End.Time
	}
	t := rep.Job.Time
	for _, ph := range rep.Phases {
		t = later(t, ph.End)
	}
	for _, a := range rep.Attempts {
		t = later(t, a.End)
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Throughput is the committed and duplicate attempts' bytes in and out
// over time: bins bins from the job's start to its end, each the MiB/s
// of the attempts running then, each attempt's bytes spread evenly over
// its run.
func (rep *Report) Throughput(bins int) (step time.Duration, mibps []float64) {
	span := rep.Finish().Sub(rep.Start())
	if bins < 1 || span <= 0 {
		return 0, nil
	}
	step = max(span/time.Duration(bins), time.Millisecond)
	mibps = make([]float64, int(span/step)+1)
	for _, a := range rep.Attempts {
		bytes := float64(a.BytesIn + a.BytesOut)
		if bytes == 0 {
			continue
		}
		s, e := a.Start.Sub(rep.Start()), a.End.Sub(rep.Start())
		if e <= s {
			e = s + time.Millisecond
		}
		rate := bytes / (1 << 20) / (e - s).Seconds() // MiB/s while it ran
		for i := max(0, int(s/step)); i < len(mibps) && time.Duration(i)*step < e; i++ {
			lo, hi := max(s, time.Duration(i)*step), min(e, time.Duration(i+1)*step)
			if hi > lo {
				mibps[i] += rate * (hi - lo).Seconds() / step.Seconds()
			}
		}
	}
	return step, mibps
}
