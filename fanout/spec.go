package fanout

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/sluice-data/sluice/iceberg"
	"github.com/sluice-data/sluice/plan"
)

// Spec is a job as the driver writes it under the job's prefix
// (job.json) and every worker reads it: the plan, which of its stages
// each phase runs and over what. Workers know nothing else: their task
// index comes from the environment, and everything they read and write is
// named from here.
type Spec struct {
	// Version of this format; a worker refuses one it does not know.
	Version int `json:"version"`
	// Plan is the pipeline, in package plan's versioned JSON form: a
	// worker refuses a version it does not know.
	Plan *plan.Plan `json:"plan"`
	// Job is the URL of the job's prefix in object storage, ending in /.
	Job string `json:"job"`
	// Spread is how many key prefixes each phase's data objects are
	// spread over (see dataKey); 0 and 1 put them all under the phase's
	// own prefix.
	Spread int `json:"spread,omitempty"`
	// Threads is how many batches a worker maps at once (0: its cores).
	Threads int `json:"threads,omitempty"`
	// Phases run in order; each task of a phase reads only what the
	// manifest of the phase before it lists.
	Phases []Phase `json:"phases"`
	// Out, when set, is the URL of a prefix (ending in /) where the
	// tasks of the last phase write their outputs, one object per task,
	// and the driver a manifest listing them in order, instead of the
	// driver reading them.
	Out string `json:"out,omitempty"`
	// PieceBytes and Broadcast are the driver's Options that cut the
	// plan into these phases, so that a resumed job is cut alike.
	PieceBytes int64  `json:"piece_bytes,omitempty"`
	Broadcast  int64  `json:"broadcast,omitempty"`
	Join       string `json:"join,omitempty"`
	// Memory is each worker's budget in bytes (Options.Memory; 0: none).
	Memory int64 `json:"memory,omitempty"`
}

// Phase kinds.
const (
	PhaseMap    = "map"    // a task per input piece
	PhaseReduce = "reduce" // a task per shuffle part
)

// Outputs of a phase's tasks.
const (
	OutStream  = "stream"  // an Arrow IPC stream of the segment's batches
	OutPartial = "partial" // an IPC stream of per-batch aggregate summaries (exec.CompileAgg)
	OutShuffle = "shuffle" // one object with a part per reducer and their index
	OutFile    = "file"    // an Arrow IPC file (a reducer's sorted groups, merged at the end)
)

// Phase is one set of independent tasks.
type Phase struct {
	Kind string `json:"kind"`
	// Stages [From, To) of the pipeline (after its source) run in each
	// task; Agg, when not negative, is an aggregation stage run after
	// them: its partial side in a map task with output partial, the whole
	// aggregation in a reducer.
	From int `json:"from"`
	To   int `json:"to"`
	Agg  int `json:"agg"`
	// Tasks is the number of tasks: len(Pieces) for a map phase, the
	// shuffle's part count for a reduce phase.
	Tasks  int     `json:"tasks"`
	Pieces []Piece `json:"pieces,omitempty"`
	Output string  `json:"output"`
	// ShuffleBy and Parts describe a shuffle output.
	ShuffleBy []string `json:"shuffle_by,omitempty"`
	Parts     int      `json:"parts,omitempty"`
	// Position makes a map task add PositionColumn before the shuffle.
	Position bool `json:"position,omitempty"`
	// TopN, when above zero, makes a reducer whose stages end in a sort
	// that a head follows keep only the first TopN rows of that sort: a
	// top-N, which holds TopN rows instead of its whole part.
	TopN int64 `json:"top_n,omitempty"`
	// Combine, with Agg, splits the aggregation around the shuffle: a
	// map task runs its partial side before the shuffle (one summary row
	// per group and batch, so a key of half the rows is a few rows), a
	// reducer its final side over the summaries, in map and batch order:
	// the same rows, float sums to the bit, as the aggregation alone.
	Combine bool `json:"combine,omitempty"`
	// SideEffects says the phase runs a program marked --side-effects:
	// no two attempts of one of its tasks run at once.
	SideEffects bool `json:"side_effects,omitempty"`
	// Other, in a map phase of a partitioned join, is the index in the
	// plan's stages of the join whose other side the phase reads: its
	// tasks scan pieces of that side's scan and run its stages [From, To)
	// (after its source) into a shuffle by the join's right keys.
	Other int `json:"other,omitempty"`
	// Build, in the reduce phase of a partitioned join, is 1 + the index
	// of that phase: each reducer joins its part of the map phase before
	// it (the stream's rows) with its part of that one (the other side's).
	Build int `json:"build,omitempty"`
}

// Piece is the input of a map task: row groups [Lo, Hi) of one file of
// the dataset of the scan's URL number URL, or, with Whole, all of that
// URL's dataset.
type Piece struct {
	URL int    `json:"url"`
	Key string `json:"key,omitempty"`
	// Scan, when set, is the URL a task scans instead of the scan's URL
	// number URL: a pattern naming the piece's file alone, with the same
	// partition root (see scan.PiecePattern), so the task reads one
	// footer instead of the dataset's.
	Scan  string `json:"scan,omitempty"`
	Lo    int    `json:"lo"`
	Hi    int    `json:"hi"`
	Whole bool   `json:"whole,omitempty"`
	// Table, when set, is a data file of the Iceberg table of the scan's
	// URL number URL, as the driver planned it: the task reads it whole,
	// with its deletes, without planning the table again.
	Table *iceberg.Task `json:"table,omitempty"`
}

func (p Piece) String() string {
	if p.Whole {
		return fmt.Sprintf("all of scan URL %d", p.URL+1)
	}
	if p.Table != nil {
		return "data file " + p.Table.File.URL
	}
	return fmt.Sprintf("%s row groups %d-%d", p.Key, p.Lo, p.Hi-1)
}

// specVersion 2: the pipeline is a plan (version 1 carried its text).
const specVersion = 2

// Limits a spec must keep to; a worker refuses anything beyond them
// before acting on it.
const (
	maxTasks  = 1 << 20
	maxParts  = 100000
	maxPhases = 16
)

// errSpec wraps every problem found in a spec's bytes.
var errSpec = errors.New("job spec")

// ParseSpec reads a spec and checks it whole: every phase, index and
// count within bounds, so a worker never acts on half of a corrupt one.
func ParseSpec(b []byte) (*Spec, error) {
	var s Spec
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", errSpec, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the spec", errSpec)
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSpec, err)
	}
	return &s, nil
}

func (s *Spec) check() error {
	switch {
	case s.Version != specVersion:
		return fmt.Errorf("version %d, this worker reads version %d", s.Version, specVersion)
	case s.Plan == nil:
		return errors.New("no plan")
	case s.Job == "" || !strings.HasSuffix(s.Job, "/"):
		return fmt.Errorf("job prefix %q does not end in /", s.Job)
	case len(s.Phases) == 0 || len(s.Phases) > maxPhases:
		return fmt.Errorf("%d phases", len(s.Phases))
	case s.Out != "" && !strings.HasSuffix(s.Out, "/"):
		return fmt.Errorf("destination %q does not end in /", s.Out)
	case s.Spread < 0 || s.Spread > MaxSpread:
		return fmt.Errorf("spread %d: want 0..%d", s.Spread, MaxSpread)
	case s.Threads < 0:
		return errors.New("threads out of range")
	case s.PieceBytes < 0:
		return errors.New("piece_bytes out of range")
	case s.Memory < 0:
		return errors.New("memory out of range")
	}
	if err := s.Plan.Check(false); err != nil {
		return fmt.Errorf("plan: %v", err)
	}
	for i, p := range s.Phases {
		if err := p.check(i); err != nil {
			return fmt.Errorf("phase %d: %v", i, err)
		}
		if p.Kind == PhaseMap && i == 1 && s.Phases[0].Other == 0 || p.Other != 0 && (len(s.Phases) < 3 || s.Phases[2].Build != i+1) {
			return fmt.Errorf("phase %d: a second map phase comes only after a join's other side, which a join's reduce phase reads", i)
		}
		after := len(s.Plan.Stages) - 1
		if p.Other != 0 {
			j, ok := at(s.Plan.Stages, p.Other).(*plan.Join)
			if !ok || p.Kind != PhaseMap || p.Output != OutShuffle {
				return fmt.Errorf("phase %d: other side of stage %d, which is no join, or not as a shuffle", i, p.Other)
			}
			after = len(j.Other.Stages) - 1
		}
		if max(p.To, p.Agg+1) > after {
			return fmt.Errorf("phase %d runs stage %d of a plan with %d after its source", i, max(p.To, p.Agg+1), after)
		}
		if p.Build != 0 {
			b := p.Build - 1
			if p.Kind != PhaseReduce || b < 0 || b >= i-1 || s.Phases[b].Other == 0 || s.Phases[b].Parts != p.Tasks ||
				s.Phases[i-1].Parts != p.Tasks || p.To != p.From+1 || p.Agg >= 0 {
				return fmt.Errorf("phase %d: a join's reduce phase with build phase %d", i, b)
			}
			if _, ok := at(s.Plan.Stages[1:], p.From).(*plan.Join); !ok {
				return fmt.Errorf("phase %d: a join's reduce phase runs stage %d, which is no join", i, p.From)
			}
		}
	}
	return nil
}

func (p Phase) check(i int) error {
	switch {
	case p.From < 0 || p.To < p.From || p.To > 1000:
		return fmt.Errorf("stages [%d, %d)", p.From, p.To)
	case p.Agg < -1 || p.Agg > 1000 || (p.Agg >= 0 && p.Agg < p.To):
		return fmt.Errorf("aggregation stage %d", p.Agg)
	case p.Tasks < 1 || p.Tasks > maxTasks:
		return fmt.Errorf("%d tasks", p.Tasks)
	case p.TopN < 0 || p.TopN > maxTopN || p.TopN > 0 && (p.Kind != PhaseReduce || p.To == p.From):
		return fmt.Errorf("top_n %d", p.TopN)
	}
	switch p.Kind {
	case PhaseMap:
		// The first, or the second after the other side of a join.
		if i > 1 || i == 1 && p.Other != 0 || len(p.Pieces) != p.Tasks {
			return fmt.Errorf("a map phase must be first (or second after a join's other side) with a piece per task (%d pieces, %d tasks)", len(p.Pieces), p.Tasks)
		}
		for _, pc := range p.Pieces {
			if pc.URL < 0 || pc.URL > 1000 || (pc.Table != nil && pc.Table.File.URL == "") || (!pc.Whole && pc.Table == nil && (pc.Key == "" || pc.Lo < 0 || pc.Hi <= pc.Lo)) {
				return fmt.Errorf("piece %+v", pc)
			}
		}
	case PhaseReduce:
		if i == 0 || len(p.Pieces) != 0 || p.Other != 0 {
			return errors.New("a reduce phase follows a shuffle and has no pieces")
		}
	default:
		return fmt.Errorf("unknown kind %q", p.Kind)
	}
	if p.Position && p.Output != OutShuffle {
		return errors.New("row positions without a shuffle")
	}
	if p.Combine && (p.Agg < 0 || p.Kind == PhaseMap && p.Output != OutShuffle) {
		return errors.New("combine without an aggregation around a shuffle")
	}
	switch p.Output {
	case OutStream, OutFile:
	case OutPartial:
		if p.Agg < 0 {
			return errors.New("partial output without an aggregation")
		}
	case OutShuffle:
		if p.Parts < 1 || p.Parts > maxParts || len(p.ShuffleBy) == 0 {
			return fmt.Errorf("shuffle to %d parts by %q", p.Parts, p.ShuffleBy)
		}

	default:
		return fmt.Errorf("unknown output %q", p.Output)
	}
	return nil
}

// id is the job's name: the last element of its prefix.
func (s *Spec) id() string { return path.Base(strings.TrimSuffix(s.Job, "/")) }

// Marshal is the spec as written to the store.
func (s *Spec) Marshal() ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%w: %v", errSpec, err)
	}
	return json.MarshalIndent(s, "", " ")
}
