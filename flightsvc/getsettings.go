package flightsvc

import (
	"strings"

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
