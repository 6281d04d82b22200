package flightsvc

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/collect"
	"github.com/sluice-data/sluice/format"
)

// GetSettings are a fetch as sluice get's command line spells it: columns
// as a comma-separated list, the order and the output's format by name.
// A Go caller taking a fetch as text (its own flags, a config file) wants
// the same reading: Options reads and checks them, and its errors match
// ErrInvalid and name the flags (--columns, -o), the terms the text was
// written in.
type GetSettings struct {
	// Columns are the columns to fetch, comma-separated; blank is all.
	Columns string
	Filter  string
	// Order is dataset or arrival; empty is dataset, or arrival into an
	// ordered Format (an Arrow IPC file's footer puts the batches in
	// dataset order, so nothing needs to wait for a slow endpoint).
	Order    string
	Parallel int
	Token    string
	// Output is GetToOptions.Output; Format, when set, its format by name
	// whatever Output's name says (format.Choose).
	Output, Format string
}

// Bind defines sluice get's flags for a fetch on fs, bound to s's
// fields, with their defaults. They are defined here, beside the checks
// that name them, so that every command that takes them defines them
// once, as plan.BindScan does a scan's; a Token from elsewhere (sluice
// get's $SLUICE_TOKEN) is the caller's to fill in.
func (s *GetSettings) Bind(fs *pflag.FlagSet) {
	fs.StringVar(&s.Columns, "columns", "", "comma-separated columns to fetch, in that order (default: all)")
	fs.StringVar(&s.Filter, "filter", "", `keep rows matching comparisons joined by "and" (as for scan)`)
	fs.StringVar(&s.Order, "order", "", "batch order: dataset or arrival (default: dataset; arrival into an Arrow IPC file, whose footer lists them in dataset order)")
	fs.IntVar(&s.Parallel, "parallel", 8, "endpoints fetched at once")
	fs.StringVar(&s.Token, "token", "", "bearer token for the service (default: $SLUICE_TOKEN)")
	fs.StringVarP(&s.Output, "output", "o", "", "write to a path or URL ending in "+format.SuffixHelp()+", or - for stdout")
	fs.StringVar(&s.Format, "format", "", "-o's format whatever its name: "+format.NameHelp())
}

// Options reads and checks s into the GetToOptions it asks for; the
// caller adds where the output goes (Stdout, OpenOutput) and progress.
func (s GetSettings) Options() (GetToOptions, error) {
	var o GetToOptions
	o.Order, o.Filter, o.Parallel, o.Token, o.Output = collect.Dataset, s.Filter, s.Parallel, s.Token, s.Output
	var err error
	if s.Order != "" {
		if o.Order, err = collect.ParseOrder(s.Order); err != nil {
			return o, invalidf("--order: %v", err)
		}
	}
	if s.Parallel < 1 {
		return o, invalidf("--parallel %d: want at least 1", s.Parallel)
	}
	if strings.TrimSpace(s.Columns) != "" {
		for _, c := range strings.Split(s.Columns, ",") {
			if c = strings.TrimSpace(c); c == "" {
				return o, invalidf("--columns %q: an empty column name", s.Columns)
			}
			o.Columns = append(o.Columns, c)
		}
	}
	switch {
	case s.Output == "":
		if s.Format != "" {
			return o, invalidf("--format %s: without -o nothing is written", s.Format)
		}
	default:
		if o.Format, err = format.Choose(s.Output, s.Format); err != nil {
			return o, invalidf("-o %s: %v", s.Output, err)
		}
	}
	if o.Format.Ordered() && s.Order == "" {
		o.Order = collect.Arrival
	}
	return o, nil
}
