package plan

import (
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Exec runs a program as a stage: the stage's input goes to its standard
// input in format In, and what it writes to its standard output, in
// format Out, is the stage's output.
type Exec struct {
	// Argv is the program and its arguments.
	Argv []string `json:"argv"`
	// In and Out are the formats of the program's input and output:
	// arrows (an Arrow IPC stream; "" means it too), csv or jsonl.
	In  string `json:"in,omitempty"`
	Out string `json:"out,omitempty"`
	// Schema, when set, is the output's columns: checked against what the
	// program writes, and the types its CSV is read with.
	Schema []Column `json:"schema,omitempty"`
	// Timeout, when above zero, kills the program when it runs longer.
	// In JSON it is a number of nanoseconds.
	Timeout time.Duration `json:"timeout,omitempty"`
	// SideEffects says the program acts on the world besides its output:
	// a fan-out runs no two attempts of its task at once and duplicates
	// no straggler.
	SideEffects bool `json:"side_effects,omitempty"`
}

// Column is a column's name and type, a type from-csv --types names.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// ExecFormats are the formats a program's input and output may take.
var ExecFormats = []string{"arrows", "csv", "jsonl"}

// ColumnTypes are the types --schema and from-csv --types name.
var ColumnTypes = []string{"int64", "float64", "bool", "date32", "timestamp", "string"}

func (*Exec) Name() string { return "exec" }

func (s *Exec) words() (flags, args []string) {
	if s.In != "" && s.In != "arrows" {
		flags = append(flags, "--in", s.In)
	}
	if s.Out != "" && s.Out != "arrows" {
		flags = append(flags, "--out", s.Out)
	}
	if len(s.Schema) > 0 {
		cols := make([]string, len(s.Schema))
		for i, c := range s.Schema {
			cols[i] = c.Name + "=" + c.Type
		}
		flags = append(flags, "--schema", join(cols))
	}
	if s.Timeout > 0 {
		flags = append(flags, "--timeout", s.Timeout.String())
	}
	if s.SideEffects {
		flags = append(flags, "--side-effects")
	}
	return flags, s.Argv
}

func (s *Exec) check() error {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return invalidf("exec: no program given: write exec [FLAGS] -- CMD [ARG...]")
	}
	for _, f := range [][2]string{{"--in", s.In}, {"--out", s.Out}} {
		if f[1] != "" && !slices.Contains(ExecFormats, f[1]) {
			return invalidf("exec %s %q: want %s", f[0], f[1], strings.Join(ExecFormats, ", "))
		}
	}
	if s.Timeout < 0 {
		return invalidf("exec --timeout %v: want a positive duration", s.Timeout)
	}
	seen := map[string]bool{}
	for _, c := range s.Schema {
		switch {
		case strings.TrimSpace(c.Name) == "":
			return invalidf("exec --schema: an empty column name")
		case seen[c.Name]:
			return invalidf("exec --schema: column %q twice", c.Name)
		case !slices.Contains(ColumnTypes, c.Type):
			return invalidf("exec --schema %s=%s: want a type of %s", c.Name, c.Type, strings.Join(ColumnTypes, ", "))
		}
		seen[c.Name] = true
	}
	return nil
}

// HasExec says p, or a pipeline inside it, runs a program: pipelines that
// come from the network must not (RefuseExec).
func HasExec(p *Plan) bool {
	for _, st := range p.Stages {
		if _, ok := st.(*Exec); ok {
			return true
		}
		if n, ok := st.(nested); ok {
			for _, sub := range n.subPlans() {
				if sub != nil && HasExec(sub) {
					return true
				}
			}
		}
	}
	return false
}

// RefuseExec is the error for a pipeline from the network that would run
// a program on this machine; nil when it runs none.
func RefuseExec(p *Plan, from string) error {
	if HasExec(p) {
		return invalidf("exec: refused in a pipeline from %s: only a pipeline given on this machine runs programs", from)
	}
	return nil
}

// SideEffects says st is an exec stage marked --side-effects.
func SideEffects(st Stage) bool {
	x, ok := st.(*Exec)
	return ok && x.SideEffects
}

// PerPiece says s runs over any part of a stream on its own, giving for
// the whole what it gives for the parts in order: a per-batch stage, or a
// program (which then runs once per part: see exec's help). A fan-out
// runs it in the map tasks, or in the reducers.
func PerPiece(s Stage) bool {
	_, ok := s.(*Exec)
	return ok || PerBatch(s)
}

var execDef = &Def{
	Name: "exec", Kind: KindTransform, Command: true, MinArgs: 0, MaxArgs: -1,
	Use:   "exec [--in F] [--out F] [--schema COLS] [--timeout D] [--side-effects] -- CMD [ARG...]",
	Short: "Run a program of your own as a stage: the batches on its stdin, its stdout the output",
	Long: `Run CMD with ARGs (found in PATH, not through a shell) once per stage: the
stage's input is written to its standard input and what it writes to its
standard output is the stage's output, both at once, so a program that
reads all of its input before writing (sort) works, and one that stops
early (head) ends the stage cleanly.

Formats, both ways an Arrow IPC stream by default (pyarrow, the apache-arrow
npm package, arrow-go, sluice itself):
  --in arrows|csv|jsonl    what the program reads (CSV with a header line;
                           JSON lines, one object a row)
  --out arrows|csv|jsonl   what it writes: the output's columns are the
                           Arrow stream's schema, or are inferred from the
                           first lines of CSV or JSON lines as from-csv
                           does; --schema name=type,... names them instead
                           (types: int64, float64, bool, date32, timestamp,
                           string), checked against what the program writes.
                           Under run --workers give --schema with csv or
                           jsonl: each task infers from its own lines, and
                           a piece of few rows may infer other types.

The program's standard error goes to sluice's, each line after [exec CMD].
The stage fails with one line naming the program, its exit status and the
last lines of its standard error when it exits non-zero, is killed by a
signal, runs past --timeout, or writes output that is not what --out says:
an Arrow stream must end with its end-of-stream marker (a program that
crashed after a batch would look like a short result otherwise), and each
batch must have its schema. When the run fails or is interrupted, the
program's whole process group is killed.

Order: the program gets its input in dataset order. Under run --workers
each map task (or reducer) runs its own instance over its piece (or part)
and the pieces' outputs follow each other in dataset order, rows within a
piece as the program wrote them; in one process the program sees the whole
stream. So a program whose output depends on more than one row at a time
(a sort, a head) gives one result per piece under --workers: put such
work in sluice's own stages, or after an exchange. Each instance has
SLUICE_PHASE (map or reduce), SLUICE_TASK_INDEX and SLUICE_PIECE (the
piece it reads: FILE:FIRST-LAST row groups, or the reducer's part) in its
environment.

Under --workers a program may run more than once on a piece: a failed task
is retried, a straggler gets a duplicate attempt, and a map output found
lost is made again; only one attempt's output is kept. A program that acts
on the world (sends mail, writes a database) should mark the stage
--side-effects: then no two attempts of a task of its phase run at once and
no straggler is duplicated (retries after a failure still happen). The
program must exist where the tasks run: on Kubernetes in the --image, on
Slurm in the nodes' PATH; one that is missing fails the job at its first
task. When CMD is this same sluice executable, batches go through shared
memory both ways, as between piped stages. A pipeline that comes from the network
never runs programs.`,
	Example: `  # the programs of docs/examples
  sluice run 'scan ./lineitem | exec -- node add-revenue.mjs | agg-by l_returnflag "sum(revenue)" | show'
  sluice run 'scan ./taxi | exec --in csv --out csv -- awk -f big-fares.awk | to-csv'
  sluice run --workers 4 'scan ./taxi | exec --in jsonl --out jsonl --schema payment_type=string,tip_ratio=float64
      -- python3 tip-ratio.py | write ratios.parquet'
  sluice scan ./taxi -o - | sluice exec -- sluice filter "fare_amount > 20" | sluice show

  # a program that writes elsewhere: never two attempts at once
  sluice run --workers 8 'scan ./orders | exec --side-effects --timeout 10m -- ./load-into-db | to-csv'`,
	zero: func() Stage { return &Exec{} },
	Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
		// Everything from the program's name on is its own.
		fs.SetInterspersed(false)
		s := &Exec{}
		fs.StringVar(&s.In, "in", "arrows", "format of the program's input: "+strings.Join(ExecFormats, ", "))
		fs.StringVar(&s.Out, "out", "arrows", "format of the program's output: "+strings.Join(ExecFormats, ", "))
		var schema string
		fs.StringVar(&schema, "schema", "", "the output's columns, name=type,... (default: from the output)")
		fs.DurationVar(&s.Timeout, "timeout", 0, "kill the program past this long (e.g. 10m; default: no limit)")
		fs.BoolVar(&s.SideEffects, "side-effects", false, "the program acts on the world: under --workers, no two attempts of a task at once and no straggler duplicates")
		return func(args []string) (Stage, error) {
			if s.In == "arrows" {
				s.In = ""
			}
			if s.Out == "arrows" {
				s.Out = ""
			}
			s.Argv = some(args)
			s.Schema = nil
			if schema != "" {
				items, err := list("exec --schema", schema)
				if err != nil {
					return nil, err
				}
				for _, it := range items {
					name, typ, ok := strings.Cut(it, "=")
					if !ok {
						return nil, invalidf("exec --schema %q: want name=type", it)
					}
					s.Schema = append(s.Schema, Column{Name: strings.TrimSpace(name), Type: strings.TrimSpace(typ)})
				}
			}
			return checked(s)
		}
	},
}

func init() {
	i := slices.IndexFunc(defs, func(d *Def) bool { return d.Name == "shuffle" })
	defs = slices.Insert(defs, i, execDef)
}
