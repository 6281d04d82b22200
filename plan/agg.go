package plan

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/expr"
)

// Agg computes aggregates over the whole input: one row, even of no input
// (count 0, the others null), as SQL's aggregates without GROUP BY.
type Agg struct {
	Aggs string `json:"aggs"`
}

func (*Agg) Name() string                    { return "agg" }
func (s *Agg) words() (flags, args []string) { return nil, []string{s.Aggs} }
func (s *Agg) check() error {
	if _, err := expr.ParseList(AggText(s.Aggs)); err != nil {
		return invalidf("agg: %v", err)
	}
	return nil
}

var aggDef = &Def{
	Name: "agg", Kind: KindTransform, Command: true, MinArgs: 1, MaxArgs: -1,
	Use:   "agg AGG[,AGG...]",
	Short: "Aggregate the whole input into one row (agg-by's aggregates, no groups)",
	Long: `Compute aggregates over the whole input, as agg-by does per group (see
sluice agg-by --help for the aggregates): one row, even when no row comes
in (count 0, every other aggregate null), as SQL's aggregates without
GROUP BY. Under run --workers each map task sends its summary and the
driver folds them, so the result equals one process's to the bit.`,
	Example: `  sluice agg "sum(l_extendedprice * l_discount) as revenue"
  sluice run "scan ./lineitem | filter 'l_discount between 0.05 and 0.07 and l_quantity < 24' | agg 'sum(l_extendedprice * l_discount) as revenue' | show"`,
	zero: func() Stage { return &Agg{} },
	Bind: func(fs *pflag.FlagSet) func([]string) (Stage, error) {
		return func(args []string) (Stage, error) {
			return checked(&Agg{Aggs: strings.Join(args, ",")})
		}
	},
}

func init() {
	i := slices.IndexFunc(defs, func(d *Def) bool { return d.Name == "agg-by" })
	defs = slices.Insert(defs, i+1, aggDef)
}
