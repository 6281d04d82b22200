package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-data/sluice/fanout"
)

var t0 = time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// testLog is a job of a map phase of 3 tasks and a reduce phase of 1 on
// host a (two slots) and host b: map task 1 fails once, map task 2
// straggles and gets a duplicate that is stopped.
func testLog(t testing.TB) []byte {
	t.Helper()
	evs := []fanout.Event{
		{Type: fanout.EventJob, Time: at(0), Version: fanout.EventVersion, Job: "file:///j/job-1/", Plan: "scan x | shuffle --by k --to 1 | sum-by k v", Workers: 3,
			PhaseList: []fanout.PhaseInfo{{Kind: fanout.PhaseMap, Tasks: 3}, {Kind: fanout.PhaseReduce, Tasks: 1}}},
		{Type: fanout.EventPhase, Time: at(10), Phase: 0, Kind: fanout.PhaseMap, Tasks: 3},
		{Type: fanout.EventAttempt, Time: at(300), Phase: 0, Task: 0, Attempt: "a1-x", Worker: "a pid 1", Start: at(20), End: at(300), Outcome: fanout.OutcomeCommitted, RowsIn: 100, BytesIn: 1 << 20, RowsOut: 100, BytesOut: 1 << 19},
		{Type: fanout.EventAttempt, Time: at(120), Phase: 0, Task: 1, Attempt: "a1-y", Worker: "a pid 2", Start: at(20), End: at(120), Outcome: fanout.OutcomeFailed, Error: "boom"},
		{Type: fanout.EventAttempt, Time: at(2400), Phase: 0, Task: 2, Attempt: "a1-z", Worker: "b pid 3", Start: at(20), End: at(2400), Outcome: fanout.OutcomeCommitted, RowsIn: 100, BytesIn: 1 << 20, RowsOut: 100, BytesOut: 1 << 19},
		{Type: fanout.EventAttempt, Time: at(420), Phase: 0, Task: 1, Attempt: "a2-w", Worker: "a pid 4", Start: at(130), End: at(420), Outcome: fanout.OutcomeCommitted, RowsIn: 100, BytesIn: 1 << 20, RowsOut: 100, BytesOut: 1 << 19},
		{Type: fanout.EventAttempt, Time: at(2400), Phase: 0, Task: 2, Attempt: "a2", Worker: "pid 5", Start: at(1500), End: at(2400), Outcome: fanout.OutcomeStopped},
		{Type: fanout.EventPhaseEnd, Time: at(2400), Phase: 0, Kind: fanout.PhaseMap, Tasks: 3},
		{Type: fanout.EventPhase, Time: at(2410), Phase: 1, Kind: fanout.PhaseReduce, Tasks: 1},
		{Type: fanout.EventAttempt, Time: at(2600), Phase: 1, Task: 0, Attempt: "a1-v", Worker: "a pid 6", Start: at(2420), End: at(2600), Outcome: fanout.OutcomeCommitted, RowsIn: 300, BytesIn: 3 << 19, RowsOut: 7, BytesOut: 1000},
		{Type: fanout.EventPhaseEnd, Time: at(2610), Phase: 1, Kind: fanout.PhaseReduce, Tasks: 1},
		{Type: fanout.EventJobEnd, Time: at(2700)},
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, ev := range evs {
		if err := enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestRead(t *testing.T) {
	rep, err := Read(bytes.NewReader(testLog(t)))
	if err != nil {
		t.Fatal(err)
	}
	mp, rd := rep.Phases[0], rep.Phases[1]
	if mp.Attempts != 5 || mp.Committed != 3 || mp.Failed != 1 || mp.Stopped != 1 || mp.Duplicates != 0 || mp.RowsIn != 300 || mp.BytesIn != 3<<20 || mp.RowsOut != 300 {
		t.Errorf("map phase %+v", mp)
	}
	if rd.Attempts != 1 || rd.Committed != 1 || rd.RowsIn != 300 || rd.RowsOut != 7 || rd.Wall() != 200*time.Millisecond {
		t.Errorf("reduce phase %+v", rd)
	}
	// The straggler: 2.38 s against a median of 0.29 s; the stopped
	// duplicate's 0.9 s is past 2x0.29 s too.
	var stragglers []string
	for _, a := range rep.Attempts {
		if a.Straggler {
			stragglers = append(stragglers, a.Attempt)
		}
	}
	if strings.Join(stragglers, ",") != "a1-z,a2" || mp.Stragglers != 2 {
		t.Errorf("stragglers %q (%d), want a1-z,a2", stragglers, mp.Stragglers)
	}
	if len(rep.Retried) != 2 || rep.Retried[0].Task != 1 || rep.Retried[0].Errors[0] != "boom" ||
		strings.Join(rep.Retried[0].Outcomes, ",") != "failed,committed" || rep.Retried[1].Task != 2 {
		t.Errorf("retried %+v", rep.Retried)
	}
	// Host a ran two attempts at once from 20 ms: two lanes; b one; the
	// attempt of a worker without a host gets a lane of its own.
	var lanes []string
	for _, l := range rep.Lanes {
		lanes = append(lanes, l.Name)
	}
	if strings.Join(lanes, ",") != "a #1,a #2,b #1,pid 5 #1" {
		t.Errorf("lanes %q", lanes)
	}
	// The reducer takes the lane of a free first: a #1.
	if l := rep.Lanes[0]; l.Attempts != 2 || l.Committed != 2 || l.Busy != 280*time.Millisecond+180*time.Millisecond {
		t.Errorf("lane a #1: %+v (task 0, then the reducer)", l)
	}
	if l := rep.Lanes[1]; l.Attempts != 2 || l.Committed != 1 || l.Busy != 100*time.Millisecond+290*time.Millisecond {
		t.Errorf("lane a #2: %+v (task 1's two attempts)", l)
	}
	// The throughput's integral is every byte the attempts moved.
	step, mibps := rep.Throughput(100)
	sum := 0.0
	for _, v := range mibps {
		sum += v * step.Seconds()
	}
	want := float64(3<<20+3<<19+3<<19+1000) / (1 << 20)
	if math.Abs(sum-want) > 1e-6*want {
		t.Errorf("throughput integrates to %.6f MiB, want %.6f", sum, want)
	}
}

func TestReadRefuses(t *testing.T) {
	good := strings.Split(strings.TrimSpace(string(testLog(t))), "\n")
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"empty", nil, "no job line"},
		{"not JSON", []string{"hello"}, "line 1: invalid character"},
		{"attempt first", good[2:], "line 1: a \"attempt\" line before the job line"},
		{"version", []string{strings.Replace(good[0], `"version":1`, `"version":7`, 1)}, "line 1: event log version 7: this sluice reads version 1"},
		{"phase out of range", append(good[:1:1], strings.Replace(good[2], `"phase":0`, `"phase":5`, 1)), "line 2: phase 5: the job has 2"},
		{"task out of range", append(good[:1:1], strings.Replace(good[2], `"task":0`, `"task":3`, 1)), "line 2: task 3: phase 0 has 3"},
		{"outcome", append(good[:1:1], strings.Replace(good[2], `"committed"`, `"won"`, 1)), `line 2: phase 0 task 0: outcome "won"`},
		{"type", append(good[:1:1], `{"type":"party","time":"2026-12-06T10:00:00Z"}`), `line 2: a line of type "party"`},
		{"no time", append(good[:1:1], `{"type":"phase","phase":0}`), `line 2: a "phase" line without its time`},
		{"two jobs", append(good[:1:1], good[0]), "line 2: a second job line"},
		{"long line", []string{strings.Repeat("x", maxLine+1)}, "line 1: longer than 4 MiB"},
	} {
		_, err := Read(strings.NewReader(strings.Join(c.lines, "\n")))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A log cut short (the driver died) still reads, to the last attempt.
func TestReadCutShort(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(string(testLog(t))), "\n")
	rep, err := Read(strings.NewReader(strings.Join(lines[:6], "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.End.Time.IsZero() || !rep.Finish().Equal(at(2400)) || len(rep.Attempts) != 4 {
		t.Fatalf("end %v, finish %v, %d attempts", rep.End.Time, rep.Finish(), len(rep.Attempts))
	}
}

func FuzzRead(f *testing.F) {
	lines := strings.Split(strings.TrimSpace(string(testLog(f))), "\n")
	f.Add(strings.Join(lines, "\n"))
	f.Add(strings.Join(lines[:4], "\n"))
	f.Add(lines[0] + "\n" + `{"type":"attempt","time":"2026-12-06T10:00:00Z","phase":1,"task":0,"start":"2026-12-06T10:00:00Z","end":"2026-12-06T09:00:00Z","outcome":"failed"}`)
	f.Fuzz(func(t *testing.T, s string) {
		rep, err := Read(strings.NewReader(s))
		if err != nil {
			return
		}
		// What reads is consistent: each attempt's phase and lane exist
		// (render's FuzzDraw draws what reads).
		for _, a := range rep.Attempts {
			if a.Phase < 0 || a.Phase >= len(rep.Phases) || a.Lane < 0 || a.Lane >= len(rep.Lanes) {
				t.Fatalf("attempt %+v: phase or lane out of %d phases, %d lanes", a, len(rep.Phases), len(rep.Lanes))
			}
		}
	})
}

// TestLog: the log is written whole also when the run fails, and the
// run's error comes first.
func TestLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	boom := errors.New("boom")
	err := Log(path, func(w io.Writer) error {
		_, _ = io.WriteString(w, "{}\n")
		return boom
	})
	if b, rerr := os.ReadFile(path); err != boom || rerr != nil || string(b) != "{}\n" {
		t.Errorf("Log: %v; file %q, %v", err, b, rerr)
	}
	if err := Log(filepath.Join(t.TempDir(), "no", "dir"), func(io.Writer) error { return nil }); err == nil {
		t.Error("a log that could not be written: no error")
	}
}
