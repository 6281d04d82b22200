package bench

import (
	"math"
	"testing"
	"time"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4}
	for _, c := range []struct{ q, want float64 }{
		{0, 1}, {0.5, 2.5}, {0.9, 3.7}, {1, 4}, {1.5, 4},
	} {
		near(t, "Percentile", Percentile(v, c.q), c.want)
	}
	near(t, "one value", Percentile([]float64{7}, 0.99), 7)
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Error("Percentile of nothing should be NaN")
	}
}

func TestDistribution(t *testing.T) {
	v := make([]float64, 100)
	for i := range v {
		v[len(v)-1-i] = float64(i + 1) // unsorted on purpose
	}
	d := Distribution(v)
	want := Dist{N: 100, Min: 1, P10: 10.9, P50: 50.5, P90: 90.1, P99: 99.01, Max: 100, Mean: 50.5}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"min", d.Min, want.Min}, {"p10", d.P10, want.P10}, {"p50", d.P50, want.P50},
		{"p90", d.P90, want.P90}, {"p99", d.P99, want.P99}, {"max", d.Max, want.Max}, {"mean", d.Mean, want.Mean},
	} {
		near(t, c.name, c.got, c.want)
	}
	if d.N != 100 || v[0] != 100 {
		t.Errorf("N = %d, input reordered = %v", d.N, v[0] != 100)
	}
	if (Distribution(nil) != Dist{}) {
		t.Error("Distribution of nothing should be zero")
	}
}

// twoWorkers is a phase of five 10 MiB gets with a 100 ms first byte:
// worker 0 runs 0-1s, 1-2s, 2-3s; worker 1 starts late and runs 0.5-1.5s,
// 1.5-2.5s. The steady window is 0.5s (worker 1's first request) to 2.5s
// (worker 1 runs out of work).
func twoWorkers() []Record {
	var recs []Record
	add := func(worker, object int, start float64) {
		recs = append(recs, Record{
			Kind: Get, Concurrency: 2, Worker: worker, Object: object,
			ObjectSize: 10 * mib, Len: 10 * mib, Attempt: 1,
			Start: sec(start), FirstByte: sec(start + 0.1), LastByte: sec(start + 1), Bytes: 10 * mib,
		})
	}
	add(0, 0, 0)
	add(1, 1, 0.5)
	add(0, 2, 1)
	add(1, 3, 1.5)
	add(0, 4, 2)
	return recs
}

func TestSteadyWindow(t *testing.T) {
	w, ok := SteadyWindow(twoWorkers())
	if !ok || w != (Span{sec(0.5), sec(2.5)}) {
		t.Fatalf("window = %v, %v; want 0.5s..2.5s", w, ok)
	}
	// Worker 0 is done before worker 1 starts: never were both busy.
	uneven := []Record{
		{Worker: 0, Start: 0, LastByte: sec(0.4), Attempt: 1},
		{Worker: 1, Start: sec(0.5), LastByte: sec(1), Attempt: 1},
	}
	if w, ok := SteadyWindow(uneven); ok {
		t.Fatalf("window = %v; want none", w)
	}
	if _, ok := SteadyWindow(nil); ok {
		t.Fatal("window of no records")
	}
}

// Worker 0 of process 1 is another worker than worker 0 of process 0: the
// window starts when the later of the two processes starts.
func TestSteadyWindowProcesses(t *testing.T) {
	recs := []Record{
		{Worker: 0, Process: 0, Processes: 2, Start: 0, LastByte: sec(3)},
		{Worker: 0, Process: 1, Processes: 2, Start: sec(1), LastByte: sec(2)},
	}
	if w, ok := SteadyWindow(recs); !ok || w != (Span{sec(1), sec(2)}) {
		t.Fatalf("window = %v, %v; want 1s..2s", w, ok)
	}
}

func TestAnalyzeSteadyAndWhole(t *testing.T) {
	s := Analyze(twoWorkers(), Span{0, sec(3)})
	// Whole run: 50 MiB over the 3 s phase.
	near(t, "whole MiB/s", s.WholeMiBps, 50.0/3)
	near(t, "whole objects/s", s.WholeObjps, 5.0/3)
	near(t, "wall", s.Wall, 3)
	// Steady: each body spread over its 0.9 s from first to last byte.
	// In 0.5-2.5s: 10*0.5/0.9 + 10 + 10 + 10 + 10*0.4/0.9 = 40 MiB in 2 s.
	if s.WindowIsPhase || s.Window != (Span{sec(0.5), sec(2.5)}) {
		t.Fatalf("window = %v (is phase %v)", s.Window, s.WindowIsPhase)
	}
	near(t, "steady MiB/s", s.SteadyMiBps, 20)
	near(t, "steady objects/s", s.SteadyObjps, 2)
	if s.Objects != 5 || s.Requests != 5 || s.Bytes != 50*mib || s.Errors != 0 || s.Retries != 0 {
		t.Fatalf("counts: %+v", s)
	}
	near(t, "request MiB/s p50", s.RequestMiBps.P50, 10)
	near(t, "first byte p99", s.FirstByteMs.P99, 100)
	near(t, "last byte max", s.LastByteMs.Max, 1000)
	if s.Kind != Get || s.Concurrency != 2 || s.ObjectSize != 10*mib || s.RangeSize != 0 {
		t.Fatalf("identity: %+v", s)
	}
}

func TestAnalyzeFallsBackToPhase(t *testing.T) {
	recs := []Record{
		{Kind: Put, Worker: 0, Object: 0, ObjectSize: mib, Len: mib, Attempt: 1, Start: 0, FirstByte: sec(0.1), LastByte: sec(0.4), Bytes: mib},
		{Kind: Put, Worker: 1, Object: 1, ObjectSize: mib, Len: mib, Attempt: 1, Start: sec(0.5), FirstByte: sec(0.6), LastByte: sec(0.9), Bytes: mib},
	}
	s := Analyze(recs, Span{0, sec(1)})
	if !s.WindowIsPhase || s.Window != (Span{0, sec(1)}) {
		t.Fatalf("window = %v, is phase %v", s.Window, s.WindowIsPhase)
	}
	near(t, "steady MiB/s", s.SteadyMiBps, 2)
	near(t, "whole MiB/s", s.WholeMiBps, 2)
}

func TestAnalyzeErrorsRetriesRanges(t *testing.T) {
	r := func(object int, off int64, attempt int, err string, bytes int64) Record {
		return Record{Kind: Get, Worker: 0, Object: object, ObjectSize: 8 * mib, Off: off, Len: 4 * mib,
			Attempt: attempt, Start: sec(float64(len(err))), LastByte: sec(1), Bytes: bytes, Err: err}
	}
	recs := []Record{
		// object 0: both ranges, the second after one retry
		r(0, 0, 1, "", 4*mib),
		r(0, 4*mib, 1, "reset", mib),
		r(0, 4*mib, 2, "", 4*mib),
		// object 1: second range fails twice, so the object is incomplete
		r(1, 0, 1, "", 4*mib),
		r(1, 4*mib, 1, "reset", 0),
		r(1, 4*mib, 2, "reset", 2*mib),
	}
	s := Analyze(recs, Span{0, sec(2)})
	if s.Objects != 1 || s.Requests != 3 || s.Errors != 1 || s.Retries != 2 || s.Bytes != 12*mib {
		t.Fatalf("objects %d requests %d errors %d retries %d bytes %d", s.Objects, s.Requests, s.Errors, s.Retries, s.Bytes)
	}
	if s.RangeSize != 4*mib || s.ObjectSize != 8*mib {
		t.Fatalf("range %d object %d", s.RangeSize, s.ObjectSize)
	}
	near(t, "whole MiB/s (successful bytes only)", s.WholeMiBps, 6)
}

func TestTimeline(t *testing.T) {
	// One request moving 10 MiB evenly from 1s to 2s, seen in 4 bins over 0-2s.
	recs := []Record{{Kind: Get, Attempt: 1, Start: sec(0.9), FirstByte: sec(1), LastByte: sec(2), Bytes: 10 * mib}}
	got := Timeline(recs, Span{0, sec(2)}, 4)
	for i, want := range []float64{0, 0, 10, 10} {
		near(t, "bin", got[i], want)
	}
}
