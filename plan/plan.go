// Package plan is the pipeline as data: a Plan is a list of stage nodes,
// each a plain value of its stage's type with typed arguments, and child
// plans for sub-pipelines. It holds the one parser of sluice's pipeline
// language (Parse), a printer that reads back as the same plan (String),
// and a versioned JSON form (Marshal, Decode) that fan-out jobs carry.
//
// Everything above this package reads plans: package exec compiles one
// into operators, package fanout cuts one at its exchanges into phases,
// and the CLI builds one from a pipeline's text or from a stage command's
// flags through the same definitions (Defs). Nothing else parses
// pipeline text.
package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// ErrInvalid is wrapped by every error that comes from how a pipeline is
// written rather than from running it. Package exec's ErrInvalid is this
// error, so one test classifies both.
var ErrInvalid = errors.New("invalid pipeline")

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, a ...any) error {
	return &invalidError{fmt.Sprintf(format, a...)}
}

// Plan is a pipeline: its stages in order. The first is a source (scan,
// from-csv, merge) unless the plan reads a stream it is given (a stage
// run as its own command reads one on stdin); only the last may be a
// sink.
type Plan struct {
	Stages []Stage
}

// Stage is one node of a plan: one of this package's stage types (*Scan,
// *Filter, *Head, ...). Its fields are its arguments, typed and checked.
type Stage interface {
	// Name is the stage's name in the pipeline language.
	Name() string
	// words are the stage's flags and positional arguments as its
	// definition parses them, for the printer.
	words() (flags, args []string)
	// check reports arguments out of their domain, for plans that did
	// not come through the parser (JSON).
	check() error
}

// Kind is where a stage may stand in a pipeline.
type Kind int

const (
	KindSource    Kind = iota // starts a pipeline
	KindTransform             // a stream in, a stream out
	KindSink                  // ends a pipeline
	KindEither                // merge: a source when first, else a transform
)

// Def is a stage's definition: its name, help and flags, from which both
// the parser and the CLI's command of the same name build the stage.
type Def struct {
	Name                      string
	Use, Short, Long, Example string
	Kind                      Kind
	// Command says the stage also runs as a command of its own (scan
	// does not: the scan command reads datasets for other uses too).
	Command bool
	// MinArgs and MaxArgs bound the positional arguments (MaxArgs < 0:
	// no bound).
	MinArgs, MaxArgs int
	// Bind declares the stage's flags on fs and returns how to build the
	// stage once they and the positional arguments are parsed.
	Bind func(fs *pflag.FlagSet) func(args []string) (Stage, error)
	// Subs, for a stage that takes sub-pipelines (written in parentheses:
	// join (scan orders | filter ...) --on ...), gives the built stage
	// its children; nil for the others.
	Subs func(st Stage, subs []*Plan) (Stage, error)
	zero func() Stage
}

// nested is a stage with sub-pipelines, which the printer writes in
// parentheses and Check checks too.
type nested interface {
	Stage
	subPlans() []*Plan
}

// SubPlans are the sub-pipelines st takes (a join's other side, a let's
// pipeline), in the order it prints them; nil for a stage that takes none.
func SubPlans(st Stage) []*Plan {
	if n, ok := st.(nested); ok {
		return n.subPlans()
	}
	return nil
}

// maxDepth bounds how deep sub-pipelines nest.
const maxDepth = 16

// TakesInput says whether st, a stage of d's, run as a command of its own,
// reads an Arrow IPC stream on its standard input: a transform or a sink
// does, except show given files (it reads those); merge does when its
// input is piped (it is a source otherwise); a source never does.
func (d *Def) TakesInput(st Stage, piped bool) bool {
	if sh, ok := st.(*Show); ok && len(sh.URLs) > 0 {
		return false
	}
	return d.Kind == KindTransform || d.Kind == KindSink || d.Kind == KindEither && piped
}

// CheckArgs checks the number of positional arguments.
func (d *Def) CheckArgs(args []string) error {
	switch {
	case d.MaxArgs == 0 && len(args) > 0:
		return invalidf("%s takes no arguments, got %q (see sluice %s --help)", d.Name, args, d.Name)
	case len(args) < d.MinArgs:
		return invalidf("%s takes at least %d argument(s), got %d (see sluice %s --help)", d.Name, d.MinArgs, len(args), d.Name)
	case d.MaxArgs > 0 && len(args) > d.MaxArgs:
		return invalidf("%s takes %d argument(s), got %d (see sluice %s --help)", d.Name, d.MaxArgs, len(args), d.Name)
	}
	return nil
}

// Build parses one stage's words (its flags and arguments, without its
// name) with a fresh set of its flags.
func (d *Def) Build(words []string) (Stage, error) {
	fs := pflag.NewFlagSet(d.Name, pflag.ContinueOnError)
	fs.SetOutput(discard{})
	fs.SetInterspersed(true)
	build := d.Bind(fs)
	if err := fs.Parse(words); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, invalidf("%s: see sluice %s --help", d.Name, d.Name)
		}
		if d.Name == "scan" && slices.ContainsFunc(words, func(w string) bool {
			return w == "-o" || strings.HasPrefix(w, "--output") || strings.HasPrefix(w, "--format")
		}) {
			return nil, invalidf("scan -o, --format: as a stage, the scan's batches go down the pipeline: end it with write")
		}
		return nil, invalidf("%s: %v", d.Name, err)
	}
	args := fs.Args()
	if err := d.CheckArgs(args); err != nil {
		return nil, err
	}
	return build(args)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Lookup is the definition of the stage called name, or nil.
func Lookup(name string) *Def {
	for _, d := range defs {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Defs are the definitions of every stage, in the order help lists them.
func Defs() []*Def { return defs }

// Names lists the stages, for messages.
func Names() string {
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// KindOf is where s may stand.
func KindOf(s Stage) Kind {
	if d := Lookup(s.Name()); d != nil {
		return d.Kind
	}
	return KindTransform
}

// Parse reads a pipeline's text: stages split at each | outside quotes,
// each stage into words as a shell would ('single' and "double" quotes, \
// escapes), each stage's words parsed with its flags. The first stage
// must be a source; only the last may be a sink.
func Parse(text string) (*Plan, error) { return parse(text, 0) }

func parse(text string, depth int) (*Plan, error) {
	if depth > maxDepth {
		return nil, invalidf("sub-pipelines nested more than %d deep", maxDepth)
	}
	stages, err := split(text)
	if err != nil {
		return nil, err
	}
	p := &Plan{}
	for i, raw := range stages {
		d := Lookup(raw.words[0])
		if d == nil {
			return nil, invalidf("stage %d: unknown stage %q (stages: %s)", i+1, raw.words[0], Names())
		}
		st, err := d.Build(raw.words[1:])
		if err != nil {
			return nil, err
		}
		if len(raw.subs) > 0 {
			subs := make([]*Plan, len(raw.subs))
			for j, text := range raw.subs {
				if subs[j], err = parse(text, depth+1); err != nil {
					return nil, invalidf("%s (%s): %v", d.Name, text, err)
				}
			}
			if st, err = d.Subs(st, subs); err != nil {
				return nil, err
			}
		}
		p.Stages = append(p.Stages, st)
	}
	if err := p.Check(false); err != nil {
		return nil, err
	}
	return p, nil
}

// Check checks that each stage stands where it may and that its
// arguments are in their domain; with input, the plan reads a stream it
// is given and has no source.
func (p *Plan) Check(input bool) error {
	if len(p.Stages) == 0 {
		return invalidf("no stages given")
	}
	for i, st := range p.Stages {
		if st == nil {
			return invalidf("stage %d: empty", i+1)
		}
		last := i == len(p.Stages)-1
		k := KindOf(st)
		if sh, ok := st.(*Show); ok && len(sh.URLs) > 0 {
			// show FILE: a command of its own, its files its source.
			if len(p.Stages) > 1 || input {
				return invalidf("show takes no file inside a pipeline (it shows the stream): read files with scan, or run sluice show %s", strings.Join(sh.URLs, " "))
			}
			k = KindSource
		}
		switch {
		case i == 0 && !input && k != KindSource && k != KindEither:
			return invalidf("the first stage must be a source (scan, from-csv or merge), not %s", st.Name())
		case (i > 0 || input) && k == KindSource:
			return invalidf("%s reads data: it must be the first stage", st.Name())
		case !last && k == KindSink:
			return invalidf("%s writes no stream: it must be the last stage", st.Name())
		}
		if m, ok := st.(*Merge); ok && i == 0 && !input && len(m.URLs) == 0 {
			return invalidf("merge: name the sorted inputs")
		}
		if err := st.check(); err != nil {
			return err
		}
		if n, ok := st.(nested); ok {
			for _, sub := range n.subPlans() {
				if sub == nil {
					return invalidf("%s: an empty sub-pipeline", st.Name())
				}
				if err := sub.Check(false); err != nil {
					return invalidf("%s: %v", st.Name(), err)
				}
			}
		}
	}
	return nil
}

// String prints the plan in the pipeline language; Parse reads it back
// as the same plan.
func (p *Plan) String() string {
	var b strings.Builder
	for i, st := range p.Stages {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(StageString(st))
	}
	return b.String()
}

// StageString prints one stage: its name, flags and arguments.
func StageString(st Stage) string {
	var b strings.Builder
	b.WriteString(st.Name())
	flags, args := st.words()
	for _, w := range flags {
		b.WriteByte(' ')
		b.WriteString(quote(w))
	}
	if n, ok := st.(nested); ok {
		for _, sub := range n.subPlans() {
			b.WriteString(" (" + sub.String() + ")")
		}
	}
	for i, w := range args {
		if i == 0 && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "-") }) {
			b.WriteString(" --") // what follows is no flag
		}
		b.WriteByte(' ')
		b.WriteString(quote(w))
	}
	return b.String()
}

// quote writes a word so split reads it back: bare when it has nothing
// split treats specially, else in single quotes (a single quote inside
// closes, escapes and reopens them).
func quote(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\r\n|'\"\\") {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// rawStage is one stage's words, and the text of its sub-pipelines.
type rawStage struct {
	words []string
	subs  []string
}

// split splits text into stages at | and each stage into words, as a
// shell would: 'single quotes' keep everything, "double quotes" keep all
// but \" and \\, and \ outside quotes escapes the next character. For a
// stage that takes sub-pipelines, a word starting with ( runs to its
// matching ) and is the text of a sub-pipeline, | and all.
func split(text string) ([]rawStage, error) {
	var stages []rawStage
	var cur rawStage
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			cur.words = append(cur.words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endStage := func(pos int) error {
		endWord()
		if len(cur.words) == 0 {
			return invalidf("empty stage at character %d of the pipeline", pos)
		}
		stages = append(stages, cur)
		cur = rawStage{}
		return nil
	}
	// quoted returns the index of the quote closing the one at i.
	r := []rune(text)
	quoted := func(i int) (int, error) {
		c := r[i]
		for j := i + 1; ; j++ {
			if j >= len(r) {
				return 0, invalidf("unterminated %c quote at character %d of the pipeline", c, i+1)
			}
			if r[j] == c {
				return j, nil
			}
			if c == '"' && r[j] == '\\' && j+1 < len(r) && (r[j+1] == '"' || r[j+1] == '\\') {
				j++
			}
		}
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c == '(' && !inWord && len(cur.words) > 0 && takesSubs(cur.words[0]):
			depth, start := 1, i
			for i++; depth > 0; i++ {
				if i >= len(r) {
					return nil, invalidf("unclosed ( at character %d of the pipeline", start+1)
				}
				switch r[i] {
				case '(':
					depth++
				case ')':
					depth--
				case '\\':
					i++
				case '\'', '"':
					end, err := quoted(i)
					if err != nil {
						return nil, err
					}
					i = end
				}
			}
			i--
			cur.subs = append(cur.subs, string(r[start+1:i]))
		case c == '|':
			if err := endStage(i + 1); err != nil {
				return nil, err
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			endWord()
		case c == '\\':
			inWord = true
			if i+1 < len(r) {
				i++
				if r[i] != '\n' {
					word.WriteRune(r[i])
				}
			}
		case c == '\'' || c == '"':
			inWord = true
			end, err := quoted(i)
			if err != nil {
				return nil, err
			}
			for i++; i < end; i++ {
				if c == '"' && r[i] == '\\' && (r[i+1] == '"' || r[i+1] == '\\') {
					i++
				}
				word.WriteRune(r[i])
			}
		default:
			inWord = true
			word.WriteRune(c)
		}
	}
	if err := endStage(len(r) + 1); err != nil {
		if len(stages) == 0 {
			return nil, invalidf("no stages given")
		}
		return nil, err
	}
	return stages, nil
}

// takesSubs says the stage called name takes sub-pipelines.
func takesSubs(name string) bool {
	d := Lookup(name)
	return d != nil && d.Subs != nil
}
