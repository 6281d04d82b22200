package plan

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/internal/size"
)

// Join joins the stream with another dataset, a sub-pipeline of its own:
// rows whose keys are equal (and, with Where, for which the condition
// holds) are put side by side.
type Join struct {
	// Other is the other side: a plan with its own source.
	Other *Plan `json:"other"`
	// How is the kind of join: inner, left, right, full, semi or anti.
	// Left means the stream's side, right the other one.
	How string `json:"how"`
	// Left and Right are the key columns of each side, pairwise equal.
	Left  []string `json:"left"`
	Right []string `json:"right"`
	// Where is a condition over the joined row that a match must meet
	// besides equal keys.
	Where string `json:"where,omitempty"`
	// Prefix is put before the name of every column of the other side
	// in the output.
	Prefix string `json:"prefix,omitempty"`
	// Memory is the bytes of the other side held in memory; past that
	// both sides are split into parts on disk. Zero: the run's default.
	Memory int64 `json:"memory,omitempty"`
}

// JoinKinds are the values of Join.How.
var JoinKinds = []string{"inner", "left", "right", "full", "semi", "anti"}

func (*Join) Name() string        { return "join" }
func (j *Join) subPlans() []*Plan { return []*Plan{j.Other} }

func (j *Join) words() (flags, args []string) {
	on := make([]string, len(j.Left))
	for i := range j.Left {
		on[i] = j.Left[i]
		if j.Right[i] != j.Left[i] {
			on[i] += "=" + j.Right[i]
		}
	}
	flags = []string{"--on", strings.Join(on, ",")}
	if j.How != "inner" {
		flags = append(flags, "--how", j.How)
	}
	if j.Where != "" {
		flags = append(flags, "--where", j.Where)
	}
	if j.Prefix != "" {
		flags = append(flags, "--prefix", j.Prefix)
	}
	if j.Memory != 0 {
		flags = append(flags, "--memory", size.Format(j.Memory))
	}
	return flags, nil
}

func (j *Join) check() error {
	switch {
	case j.Other == nil:
		return invalidf("join: no other side: write it in parentheses, join (scan URL | ...) --on KEYS, or give a dataset URL")
	case !slices.Contains(JoinKinds, j.How):
		return invalidf("join --how %q: one of %s", j.How, strings.Join(JoinKinds, ", "))
	case j.Memory < 0:
		return invalidf("join --memory: %d bytes", j.Memory)
	case len(j.Left) == 0 || len(j.Left) != len(j.Right):
		return invalidf("join: --on KEYS is required (A=B pairs or names both sides share)")
	}
	if err := names("join --on", append(slices.Clone(j.Left), j.Right...)); err != nil {
		return err
	}
	if j.Where != "" {
		if _, err := expr.Parse(j.Where); err != nil {
			return invalidf("join --where: %v", err)
		}
	}
	return nil
}

// joinOn reads --on: comma-separated keys, each a name both sides have or
// LEFT=RIGHT.
func joinOn(on string) (left, right []string, err error) {
	keys, err := list("join --on", on)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range keys {
		l, r, pair := strings.Cut(k, "=")
		l, r = strings.TrimSpace(l), strings.TrimSpace(r)
		if !pair {
			r = l
		}
		if l == "" || r == "" {
			return nil, nil, invalidf("join --on: %q: write KEY or LEFT=RIGHT", k)
		}
		left, right = append(left, l), append(right, r)
	}
	return left, right, nil
}

// otherSide reads the other side given as an argument rather than in
// parentheses: pipeline text (in parentheses, or starting with a source
// stage and a space) or a dataset's URL, read with scan.
func otherSide(arg string) (*Plan, error) {
	text := strings.TrimSpace(arg)
	if strings.HasPrefix(text, "(") && strings.HasSuffix(text, ")") {
		text = text[1 : len(text)-1]
	} else if first, _, spaced := strings.Cut(text, " "); !spaced || Lookup(first) == nil || Lookup(first).Kind == KindTransform || Lookup(first).Kind == KindSink {
		sc, err := Lookup("scan").Build([]string{arg})
		if err != nil {
			return nil, err
		}
		return &Plan{Stages: []Stage{sc}}, nil
	}
	p, err := Parse(text)
	if err != nil {
		return nil, invalidf("join (%s): %v", text, err)
	}
	return p, nil
}

var joinDef = &Def{
	Name: "join", Kind: KindTransform, Command: true, MinArgs: 0, MaxArgs: 1,
	Use:   "join (PIPELINE) | URL --on KEYS [--how KIND] [--where EXPR] [--prefix P] [--memory SIZE]",
	Short: "Join the rows with another dataset's on equal keys (inner, left, right, full, semi, anti)",
	Long: `Join the stream (the left side) with another dataset (the right side) on
equal keys. The right side is a pipeline of its own, written in parentheses
inside a pipeline, join (scan ./orders --filter "o_orderstatus = 'F'") ...,
or a dataset's URL, read with scan. As a command of its own, give it as
one argument: a URL, or pipeline text.

--on lists the keys: a name both sides have, or LEFT=RIGHT. Keys are equal
as SQL's = says: a null key matches nothing, integers of any width match,
and a key of another kind on each side (a string and an integer, say) is
an error. --where adds a condition over the joined row that a match must
meet too (l_suppkey <> s_suppkey).

--how is the kind:
  inner  the pairs of rows that match (the default)
  left   also each left row that matches nothing, its right columns null
  right  also each right row that matches nothing, its left columns null
  full   both
  semi   the left rows that match something, once each, left columns only
  anti   the left rows that match nothing (null keys included)

The output has the left columns, then the right ones. A key named alike
on both sides is there once (in right and full joins it takes its value
from whichever side the row has). Any other name on both sides is an
error, unless --prefix names every right column anew (--prefix o_).

Order: left rows in their order, each with its matches in the right
side's order; then, for right and full, the right rows that matched
nothing, in their order.

The right side is read first, into memory up to --memory (its batches and
hash table; by default its share of run --memory, which every sort, join
and aggregation of the run shares: at most half, less when other joins'
sides are read after it). A larger one is
split with the left side by the hash of the keys into 64 parts on disk
(under $TMPDIR, removed at the end), joined part by part, and put back in
the order above by a sort that spills too. A key whose rows alone exceed
what a part may hold (--memory; by default half of run --memory) is an
error that says so. A semi or anti join whose right side is on disk
holds its left side instead while that fits --memory, and then reads the
right side back once, marking the left rows it matches: the same rows,
without the parts. An inner, semi or right join right
after a scan skips the scan's row groups whose statistics exclude every
key of the right side (scan --stats counts them).

Under run --workers the right side is broadcast to the map tasks, or both
sides are shuffled by their keys and reducers join them (run --join), with
the same rows in the same order.`,
	Example: `  sluice run "scan ./lineitem | join (scan ./orders --filter \"o_orderdate < date '1995-03-15'\") --on l_orderkey=o_orderkey | count-by o_orderpriority | show"
  sluice run 'scan ./lineitem | join ./part --on l_partkey=p_partkey --how semi | head 10 | show'
  sluice scan ./lineitem -o - | sluice join ./orders --on l_orderkey=o_orderkey --how anti | sluice show`,
	zero: func() Stage { return &Join{} },
	Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
		var on string
		j := &Join{}
		fs.StringVar(&on, "on", "", "the keys: NAME or LEFT=RIGHT, comma-separated")
		fs.StringVar(&j.How, "how", "inner", "the kind of join: "+strings.Join(JoinKinds, ", "))
		fs.StringVar(&j.Where, "where", "", "a condition over the joined row that a match must meet too")
		fs.StringVar(&j.Prefix, "prefix", "", "put before the name of every right column")
		fs.Func("memory", "bytes of the right side and its hash table held in memory (e.g. 512MiB); past that both sides are split into parts on disk (default: its share of run --memory, at most half)", func(v string) (err error) {
			j.Memory, err = size.Parse(v)
			return err
		})
		return func(args []string) (Stage, error) {
			if on == "" {
				return nil, invalidf("join: --on KEYS is required (A=B pairs or names both sides share)")
			}
			var err error
			if j.Left, j.Right, err = joinOn(on); err != nil {
				return nil, err
			}
			if len(args) == 1 {
				if j.Other, err = otherSide(args[0]); err != nil {
					return nil, err
				}
				return checked(j)
			}
			// The other side comes as a sub-pipeline (Subs), checked there.
			return j, nil
		}
	},
	Subs: func(st Stage, subs []*Plan) (Stage, error) {
		j := st.(*Join)
		if j.Other != nil || len(subs) != 1 {
			return nil, invalidf("join takes one other side, in parentheses or as a URL")
		}
		j.Other = subs[0]
		return checked(j)
	},
}

func init() {
	// Here rather than in defs' literal: joinDef reads defs (Lookup) when it
	// builds a stage.
	i := slices.IndexFunc(defs, func(d *Def) bool { return d.Name == "filter" })
	defs = slices.Insert(defs, i+1, joinDef)
}
