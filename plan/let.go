package plan

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Let adds a column holding one value that another pipeline computes (a
// scalar subquery): every row gets it, so expressions after it can use
// it (filter 'ps_value > total * 0.0001').
type Let struct {
	Column string `json:"column"`
	// Other gives the value: one column, at most one row (none: null).
	Other *Plan `json:"other"`
}

func (*Let) Name() string             { return "let" }
func (l *Let) subPlans() []*Plan      { return []*Plan{l.Other} }
func (l *Let) words() (f, a []string) { return nil, []string{l.Column} }

func (l *Let) check() error {
	switch {
	case strings.TrimSpace(l.Column) == "":
		return invalidf("let: name the column: let NAME (PIPELINE)")
	case l.Other == nil:
		return invalidf("let %s: no pipeline: write it in parentheses, let %s (scan URL | ... | agg-by ...)", l.Column, l.Column)
	}
	return nil
}

var letDef = &Def{
	Name: "let", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: 2,
	Use:   "let NAME (PIPELINE)",
	Short: "Add a column holding the one value another pipeline computes (a scalar subquery)",
	Long: `Add a column NAME to every row, holding the one value that PIPELINE
computes: one column, at most one row (no row gives null; more is an error).
Expressions after it use the value as a column, as SQL uses a scalar
subquery. PIPELINE is written in parentheses inside a pipeline; as a
command of its own, give it as one argument (pipeline text). It is read
once, before the first row; under run --workers the driver reads it and
every map task reads its result.`,
	Example: `  sluice run "scan ./partsupp | let total (scan ./partsupp | agg-by ps_dummy 'sum(ps_supplycost * ps_availqty) as t' | select t)
      | filter 'ps_supplycost * ps_availqty > total * 0.0001' | drop total | show"`,
	zero: func() Stage { return &Let{} },
	Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
		return func(args []string) (Stage, error) {
			l := &Let{Column: strings.TrimSpace(args[0])}
			if len(args) == 2 {
				text := strings.TrimSpace(args[1])
				if strings.HasPrefix(text, "(") && strings.HasSuffix(text, ")") {
					text = text[1 : len(text)-1]
				}
				p, err := Parse(text)
				if err != nil {
					return nil, invalidf("let %s (%s): %v", l.Column, text, err)
				}
				l.Other = p
				return checked(l)
			}
			return l, nil
		}
	},
	Subs: func(st Stage, subs []*Plan) (Stage, error) {
		l := st.(*Let)
		if l.Other != nil || len(subs) != 1 {
			return nil, invalidf("let takes one pipeline, in parentheses")
		}
		l.Other = subs[0]
		return checked(l)
	},
}

func init() {
	i := slices.IndexFunc(defs, func(d *Def) bool { return d.Name == "join" })
	defs = slices.Insert(defs, i+1, letDef)
}
