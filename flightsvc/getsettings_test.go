package flightsvc

import (
	"errors"
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/collect"
)

func TestGetSettingsOptions(t *testing.T) {
	for _, c := range []struct {
		s    GetSettings
		want string
	}{
		{GetSettings{Order: "bogus", Parallel: 1}, `--order: order "bogus": want arrival or dataset`},
		{GetSettings{Parallel: 0}, "--parallel 0: want at least 1"},
		{GetSettings{Parallel: -3}, "--parallel -3: want at least 1"},
		{GetSettings{Parallel: 1, Columns: "a,,b"}, `--columns "a,,b": an empty column name`},
		{GetSettings{Parallel: 1, Columns: "a, "}, `--columns "a, ": an empty column name`},
		{GetSettings{Parallel: 1, Format: "arrow"}, "--format arrow: without -o nothing is written"},
		{GetSettings{Parallel: 1, Output: "x.bogus"}, "-o x.bogus: unknown output format: cannot tell it from the name x.bogus (want .arrow (.feather, .ipc), .arrows, .parquet (.pq), .csv, .jsonl (.ndjson))"},
		{GetSettings{Parallel: 1, Output: "x.parquet", Format: "bogus"}, `-o x.parquet: unknown output format "bogus" (want arrow, arrows, parquet, csv, jsonl)`},
	} {
		_, err := c.s.Options()
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v; want ErrInvalid saying %q", c.s, err, c.want)
		}
	}

	for _, c := range []struct {
		s       GetSettings
		columns []string
		order   collect.Order
	}{
		{GetSettings{Parallel: 2, Columns: " "}, nil, collect.Dataset},
		{GetSettings{Parallel: 2, Columns: " a ,b"}, []string{"a", "b"}, collect.Dataset},
		{GetSettings{Parallel: 2, Order: "arrival"}, nil, collect.Arrival},
		// An Arrow IPC file lists the batches in dataset order whatever
		// order they come in.
		{GetSettings{Parallel: 2, Output: "x.arrow"}, nil, collect.Arrival},
		{GetSettings{Parallel: 2, Output: "x.arrow", Order: "dataset"}, nil, collect.Dataset},
		{GetSettings{Parallel: 2, Output: "x.arrows"}, nil, collect.Dataset},
	} {
		o, err := c.s.Options()
		if err != nil || !slices.Equal(o.Columns, c.columns) || o.Order != c.order || o.Parallel != 2 || o.Output != c.s.Output {
			t.Errorf("%+v: %+v, %v; want columns %q, order %v", c.s, o, err, c.columns, c.order)
		}
	}
}

// Bind's defaults are the settings of no flags, which Options takes: the
// whole dataset in dataset order, eight endpoints at once, to no output.
func TestGetSettingsBind(t *testing.T) {
	var s GetSettings
	fs := pflag.NewFlagSet("get", pflag.ContinueOnError)
	s.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if s != (GetSettings{Parallel: 8}) {
		t.Errorf("Bind's defaults = %+v", s)
	}
	o, err := s.Options()
	if err != nil || o.Order != collect.Dataset || o.Parallel != 8 || o.Columns != nil || o.Output != "" {
		t.Errorf("Options() of the defaults = %+v, %v", o, err)
	}
	if err := fs.Parse([]string{"-o", "x.csv"}); err != nil || s.Output != "x.csv" {
		t.Errorf("-o x.csv: Output %q, %v", s.Output, err)
	}
}
