package fanout

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/plan"
)

func validSpec() *Spec {
	p, err := plan.Parse("scan x | shuffle --by k --to 2 | sum-by k v")
	if err != nil {
		panic(err)
	}
	return &Spec{Version: specVersion, Plan: p, Job: "file:///tmp/j/job-1/", Phases: []Phase{
		{Kind: PhaseMap, From: 0, To: 0, Agg: -1, Tasks: 2, Pieces: []Piece{{Key: "a.parquet", Lo: 0, Hi: 2}, {URL: 0, Whole: true}}, Output: OutShuffle, ShuffleBy: []string{"k"}, Parts: 2},
		{Kind: PhaseReduce, From: 1, To: 1, Agg: 1, Tasks: 2, Output: OutFile},
	}}
}

// validJoinSpec is the spec of a partitioned join: the other side's map
// phase, the stream's, and the reducers that join them.
func validJoinSpec() *Spec {
	p, err := plan.Parse("scan x | join (scan y | filter 'v > 1') --on k --prefix o_")
	if err != nil {
		panic(err)
	}
	pc := []Piece{{Key: "a.parquet", Lo: 0, Hi: 2}}
	return &Spec{Version: specVersion, Plan: p, Job: "file:///tmp/j/job-1/", Phases: []Phase{
		{Kind: PhaseMap, Other: 1, From: 0, To: 1, Agg: -1, Tasks: 1, Pieces: pc, Output: OutShuffle, ShuffleBy: []string{"k"}, Parts: 2, Position: true},
		{Kind: PhaseMap, From: 0, To: 0, Agg: -1, Tasks: 1, Pieces: pc, Output: OutShuffle, ShuffleBy: []string{"k"}, Parts: 2, Position: true},
		{Kind: PhaseReduce, From: 0, To: 1, Agg: -1, Tasks: 2, Output: OutStream, Build: 1},
	}}
}

func TestJoinSpec(t *testing.T) {
	b, err := validJoinSpec().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := ParseSpec(b); err != nil || s.Phases[0].Other != 1 || s.Phases[2].Build != 1 {
		t.Fatalf("read back %+v, %v", s, err)
	}
	for name, mutate := range map[string]func(*Spec){
		"other is no join":      func(s *Spec) { s.Phases[0].Other = 0 },
		"other past the plan":   func(s *Spec) { s.Phases[0].Other = 5 },
		"other's stage past":    func(s *Spec) { s.Phases[0].To = 2 },
		"other not shuffled":    func(s *Spec) { s.Phases[0].Output = OutStream },
		"build of the stream":   func(s *Spec) { s.Phases[2].Build = 2 },
		"build past":            func(s *Spec) { s.Phases[2].Build = 3 },
		"parts differ":          func(s *Spec) { s.Phases[0].Parts = 3 },
		"build not on the join": func(s *Spec) { s.Phases[2].From, s.Phases[2].To = 1, 2 },
		"no reduce":             func(s *Spec) { s.Phases = s.Phases[:2] },
		"two stream maps":       func(s *Spec) { s.Phases[0].Other = 0; s.Phases[2].Build = 0 },
		"other second":          func(s *Spec) { s.Phases[0], s.Phases[1] = s.Phases[1], s.Phases[0] },
	} {
		s := validJoinSpec()
		mutate(s)
		b, _ := json.Marshal(s)
		if _, err := ParseSpec(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSpecRoundTrip(t *testing.T) {
	b, err := validSpec().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phases[0].Pieces[0].String() != "a.parquet row groups 0-1" || s.Phases[1].Agg != 1 {
		t.Fatalf("read back %+v", s)
	}
	bad := map[string]func(*Spec){
		"version":           func(s *Spec) { s.Version = 1 },
		"no plan":           func(s *Spec) { s.Plan = nil },
		"plan not a source": func(s *Spec) { s.Plan.Stages = s.Plan.Stages[1:] },
		"stage past plan":   func(s *Spec) { s.Phases[1].Agg = 2 },
		"job not a prefix":  func(s *Spec) { s.Job = "file:///tmp/j" },
		"pieces != tasks":   func(s *Spec) { s.Phases[0].Tasks = 3 },
		"reduce first":      func(s *Spec) { s.Phases = s.Phases[1:] },
		"empty piece":       func(s *Spec) { s.Phases[0].Pieces[0].Hi = 0 },
		"shuffle no parts":  func(s *Spec) { s.Phases[0].Parts = 0 },
		"agg before stages": func(s *Spec) { s.Phases[1].Agg = 0 },
		"unknown output":    func(s *Spec) { s.Phases[1].Output = "csv" },
	}
	for name, mutate := range bad {
		s := validSpec()
		mutate(s)
		b, _ := json.Marshal(s)
		if _, err := ParseSpec(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := ParseSpec([]byte(`{"version":1,"extra":true}`)); err == nil || !strings.Contains(err.Error(), "job spec") {
		t.Errorf("unknown field: %v", err)
	}
}

// FuzzParseSpec: any bytes give a spec that passes its checks or an
// error; a spec that parses marshals and parses again to the same.
func FuzzParseSpec(f *testing.F) {
	b, _ := validSpec().Marshal()
	f.Add(b)
	f.Add([]byte(`{"version":2,"plan":{"version":1,"stages":[{"stage":"scan","urls":["x"],"batch_rows":65536,"int96_unit":"ns"}]},"job":"s3://b/j/","phases":[{"kind":"map","from":0,"to":0,"agg":-1,"tasks":1,"pieces":[{"url":0,"whole":true}],"output":"stream"}]}`))
	f.Add([]byte(`{"version":1}`))
	if b, err := validJoinSpec().Marshal(); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSpec(b)
		if err != nil {
			return
		}
		again, err := s.Marshal()
		if err != nil {
			t.Fatalf("a parsed spec does not marshal: %v", err)
		}
		s2, err := ParseSpec(again)
		if err != nil {
			t.Fatalf("a marshalled spec does not parse: %v", err)
		}
		a, _ := json.Marshal(s)
		c, _ := json.Marshal(s2)
		if string(a) != string(c) {
			t.Fatalf("round trip changed the spec:\n%s\n%s", a, c)
		}
	})
}

// FuzzParseOutput: done records and manifests are read back from the
// store; any bytes give a checked record or an error.
func FuzzParseOutput(f *testing.F) {
	ph := validSpec().Phases[0]
	f.Add([]byte(`{"task":1,"attempt":"a1-0123","key":"p0/t00001-a1-0123.shuffle","size":100,"parts":[{"off":0,"len":40,"crc32c":7},{"off":40,"len":50}]}`))
	f.Add([]byte(`{"phase":0,"outputs":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if o, err := parseOutput(b, ph); err == nil {
			var end int64
			for _, p := range o.Parts {
				end = p.Off + p.Len
			}
			if end > o.Size || len(o.Parts) != ph.Parts || o.Task >= ph.Tasks {
				t.Fatalf("accepted %+v", o)
			}
		}
		if m, err := parseManifest(b, 0, ph); err == nil && len(m.Outputs) != ph.Tasks {
			t.Fatalf("accepted a manifest of %d outputs", len(m.Outputs))
		}
	})
}
