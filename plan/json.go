package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Version is the version of the JSON form this package writes and reads;
// Decode refuses any other.
const Version = 1

// Limits a decoded plan keeps to, so a reader never acts on a huge one.
const (
	maxStages = 1000
	maxJSON   = 16 << 20
)

// The JSON form:
//
//	{"version": 1, "stages": [{"stage": "scan", "urls": ["s3://b/t/"], "columns": ["a"]},
//	                          {"stage": "head", "n": 10}]}
//
// Each stage is an object naming its stage, with its type's fields
// (docs/formats.md lists them).
type planJSON struct {
	Version int               `json:"version"`
	Stages  []json.RawMessage `json:"stages"`
}

// MarshalJSON writes the versioned JSON form.
func (p *Plan) MarshalJSON() ([]byte, error) {
	out := planJSON{Version: Version, Stages: make([]json.RawMessage, len(p.Stages))}
	for i, st := range p.Stages {
		b, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		name, _ := json.Marshal(st.Name())
		var buf bytes.Buffer
		buf.WriteString(`{"stage":`)
		buf.Write(name)
		if len(b) > 2 { // not {}
			buf.WriteByte(',')
		}
		buf.Write(b[1:])
		out.Stages[i] = buf.Bytes()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads the JSON form; see Decode.
func (p *Plan) UnmarshalJSON(b []byte) error {
	q, err := decode(b)
	if err != nil {
		return err
	}
	*p = *q
	return nil
}

// Decode reads a plan's JSON form and checks it whole: its version, every
// stage known and every argument in its domain, so a worker never acts
// on part of a plan it misreads. input is as for Check.
func Decode(b []byte, input bool) (*Plan, error) {
	p, err := decode(b)
	if err != nil {
		return nil, err
	}
	if err := p.Check(input); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return p, nil
}

func decode(b []byte) (*Plan, error) {
	if len(b) > maxJSON {
		return nil, invalidf("plan: %d bytes of JSON, more than %d", len(b), maxJSON)
	}
	var pj planJSON
	if err := strict(b, &pj); err != nil {
		return nil, invalidf("plan: %v", err)
	}
	if pj.Version != Version {
		return nil, invalidf("plan version %d: this sluice reads version %d", pj.Version, Version)
	}
	if len(pj.Stages) > maxStages {
		return nil, invalidf("plan: %d stages", len(pj.Stages))
	}
	p := &Plan{Stages: make([]Stage, len(pj.Stages))}
	for i, raw := range pj.Stages {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
			return nil, invalidf("plan: stage %d is not an object", i+1)
		}
		var name string
		if err := json.Unmarshal(fields["stage"], &name); err != nil {
			return nil, invalidf("plan: stage %d has no name", i+1)
		}
		d := Lookup(name)
		if d == nil {
			return nil, invalidf("plan: stage %d: unknown stage %q", i+1, name)
		}
		delete(fields, "stage")
		rest, err := json.Marshal(fields)
		if err != nil {
			return nil, err
		}
		st := d.zero()
		if err := strict(rest, st); err != nil {
			return nil, invalidf("plan: stage %d (%s): %v", i+1, name, err)
		}
		p.Stages[i] = st
	}
	return p, nil
}

// strict decodes one JSON value into v, refusing unknown fields and
// anything after it.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the value")
	}
	return nil
}
