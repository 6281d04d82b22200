package fanout

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluice-data/sluice/store"
)

// EventVersion is the version of the event log's lines (Options.Events;
// docs/formats.md specifies them).
const EventVersion = 1

// The kinds of event log lines, in their "type" field.
const (
	EventJob      = "job"
	EventPhase    = "phase"
	EventAttempt  = "attempt"
	EventPhaseEnd = "phase_end"
	EventJobEnd   = "job_end"
)

// The outcomes of an attempt in the event log.
const (
	OutcomeCommitted = "committed" // its output is the task's
	OutcomeDuplicate = "duplicate" // it finished too, after another attempt was committed
	OutcomeFailed    = "failed"
	OutcomeStopped   = "stopped" // still running when its phase ended, and stopped
)

// Event is one line of a job's event log. Every line has Type and Time;
// the other fields belong to the types named beside them.
type Event struct {
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// job
	Version   int         `json:"version,omitempty"`
	Job       string      `json:"job,omitempty"`
	Plan      string      `json:"plan,omitempty"`
	Workers   int         `json:"workers,omitempty"`
	PhaseList []PhaseInfo `json:"phases,omitempty"`
	// phase, attempt, phase_end
	Phase int    `json:"phase"`
	Kind  string `json:"kind,omitempty"`
	Tasks int    `json:"tasks,omitempty"`
	// attempt
	Task     int       `json:"task"`
	Attempt  string    `json:"attempt,omitempty"`
	Worker   string    `json:"worker,omitempty"`
	Piece    string    `json:"piece,omitempty"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
	Outcome  string    `json:"outcome,omitempty"`
	RowsIn   int64     `json:"rows_in,omitempty"`
	BytesIn  int64     `json:"bytes_in,omitempty"`
	RowsOut  int64     `json:"rows_out,omitempty"`
	BytesOut int64     `json:"bytes_out,omitempty"`
	Retries  int64     `json:"retries,omitempty"`
	MaxRSS   int64     `json:"max_rss,omitempty"`
	// phase_end, job_end, and a failed attempt's
	Error string `json:"error,omitempty"`
}

// PhaseInfo is a phase as the job line lists it.
type PhaseInfo struct {
	Kind  string `json:"kind"`
	Tasks int    `json:"tasks"`
}

// AttemptEvent is what an executor that starts attempts one by one (as
// Local does) reports of each through PhaseRun.Watch: once when it
// starts (End zero), once when it ends. The driver puts them beside the
// records the attempts wrote, so that an attempt killed before it could
// write one is still in the event log.
type AttemptEvent struct {
	Task int
	// Attempt is the label the executor gave it (Task.Attempt): the
	// start of the token in the attempt's records.
	Attempt    string
	Worker     string
	Start, End time.Time
	Err        error
}

// events writes the event log, one JSON object a line, and keeps the
// first write error for Run to return.
type events struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
	// watched are the running phase's attempts as the executor reported
	// them, by task and label.
	watched map[attemptKey]*AttemptEvent
}

type attemptKey struct {
	task  int
	label string
}

func newEvents(w io.Writer) *events {
	if w == nil {
		return nil
	}
	return &events{enc: json.NewEncoder(w)}
}

func (e *events) write(ev Event) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		if err := e.enc.Encode(ev); err != nil {
			e.err = fmt.Errorf("event log: %w", err)
		}
	}
}

// watch keeps what the executor reports of an attempt.
func (e *events) watch(a AttemptEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := attemptKey{a.Task, a.Attempt}
	if w := e.watched[k]; w != nil {
		// Its end: the start stays as it was reported.
		if !a.End.IsZero() {
			w.End, w.Err = a.End, a.Err
		}
		return
	}
	if e.watched == nil {
		e.watched = map[attemptKey]*AttemptEvent{}
	}
	if a.Start.IsZero() {
		a.Start = a.End
	}
	e.watched[k] = &a
}

// takeWatched returns the attempts watched in the phase just run and
// forgets them.
func (e *events) takeWatched() map[attemptKey]*AttemptEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.watched
	e.watched = nil
	return w
}

// attemptEvents are the event lines of phase pi's attempts, in order of
// their start: every record an attempt left (a done record, committed
// or not, or a failure record), and each attempt the executor watched
// that left none. committed holds the manifest's output of each task
// (nil where the phase failed before it had one); end is when the
// phase ended, the end of an attempt stopped then.
func (d *driver) attemptEvents(pi int, committed []*Output, end time.Time) ([]Event, error) {
	ctx := context.WithoutCancel(d.ctx)
	ph := d.spec.Phases[pi]
	var lines []Event
	labels := map[attemptKey]bool{}
	add := func(ev Event) {
		ev.Type, ev.Time, ev.Phase, ev.Kind = EventAttempt, ev.End, pi, ph.Kind
		if ph.Kind == PhaseMap && ev.Task < len(ph.Pieces) {
			ev.Piece = ph.Pieces[ev.Task].String()
		}
		lines = append(lines, ev)
	}
	read := func(dir string) ([][]byte, error) {
		var infos []store.ObjectInfo
		if err := d.j.do(ctx, func() (err error) {
			infos, err = d.j.st.List(ctx, d.j.prefix+fmt.Sprintf("p%d/%s/", pi, dir))
			return err
		}); err != nil && store.KindOf(err) != store.KindNotFound {
			return nil, err
		}
		recs := make([][]byte, len(infos))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for i, info := range infos {
			g.Go(func() error {
				return d.j.do(gctx, func() (err error) { recs[i], err = d.j.st.ReadAll(gctx, info.Key); return err })
			})
		}
		return recs, g.Wait()
	}
	dones, err := read("done")
	if err != nil {
		return nil, err
	}
	for _, b := range dones {
		o, err := parseOutput(b, ph)
		if err != nil {
			return nil, err
		}
		labels[attemptKey{o.Task, label(o.Attempt)}] = true
		outcome := OutcomeDuplicate
		if c := committed[o.Task]; c != nil && c.Attempt == o.Attempt {
			outcome = OutcomeCommitted
		}
		add(Event{Task: o.Task, Attempt: o.Attempt, Worker: o.Worker, Start: o.Start, End: o.End, Outcome: outcome,
			RowsIn: o.InRows, BytesIn: o.InBytes, RowsOut: o.Rows, BytesOut: o.Size, Retries: o.Retries, MaxRSS: o.MaxRSS})
	}
	fails, err := read("fail")
	if err != nil {
		return nil, err
	}
	for _, b := range fails {
		var f Failure
		if err := json.Unmarshal(b, &f); err != nil || f.Task < 0 || f.Task >= ph.Tasks {
			continue // RunPhase already said what it could of such a record
		}
		labels[attemptKey{f.Task, label(f.Attempt)}] = true
		add(Event{Task: f.Task, Attempt: f.Attempt, Worker: f.Worker, Start: f.Start, End: f.End, Outcome: OutcomeFailed, Error: f.Error})
	}
	if d.events != nil {
		for k, a := range d.events.takeWatched() {
			if labels[k] {
				continue
			}
			ev := Event{Task: a.Task, Attempt: a.Attempt, Worker: a.Worker, Start: a.Start, End: a.End, Outcome: OutcomeFailed}
			switch {
			case a.End.IsZero():
				ev.End, ev.Outcome = end, OutcomeStopped
			case a.Err != nil:
				ev.Error = oneLine(a.Err)
			default:
				ev.Error = "the worker exited without a record of its attempt"
			}
			add(ev)
		}
	}
	slices.SortFunc(lines, func(a, b Event) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Task, b.Task), strings.Compare(a.Attempt, b.Attempt))
	})
	return lines, nil
}

// label is the executor's label at the start of an attempt's token
// (label-hex), empty for a token without one.
func label(token string) string {
	i := strings.LastIndexByte(token, '-')
	if i < 0 {
		return ""
	}
	return token[:i]
}
