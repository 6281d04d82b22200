package gen

import (
	"math"
	"testing"

	"github.com/spf13/pflag"
)

func TestSettings(t *testing.T) {
	good := Settings{Rows: 100, Files: 4, SF: 1, Seed: 7, Concurrency: 2}
	with := func(edit func(*Settings)) Settings {
		s := good
		edit(&s)
		return s
	}
	for _, c := range []struct {
		name string
		s    Settings
		want string
	}{
		{"no rows", with(func(s *Settings) { s.Rows = 0 }), "--rows must be at least 1, got 0"},
		{"no files", with(func(s *Settings) { s.Files = -1 }), "--files must be at least 1, got -1"},
		{"negative row groups", with(func(s *Settings) { s.RowGroupRows = -1 }), "--row-group-rows must be 0 (the default) or more, got -1"},
	} {
		if _, err := c.s.Options(); err == nil || err.Error() != c.want {
			t.Errorf("Options, %s: %v; want %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct {
		name string
		s    Settings
		want string
	}{
		{"sf 0", with(func(s *Settings) { s.SF = 0 }), "--sf must be a scale factor from 0.001 to 100000, got 0"},
		{"sf too small", with(func(s *Settings) { s.SF = 0.0001 }), "--sf must be a scale factor from 0.001 to 100000, got 0.0001"},
		{"sf too large", with(func(s *Settings) { s.SF = 200_000 }), "--sf must be a scale factor from 0.001 to 100000, got 200000"},
		{"sf NaN", with(func(s *Settings) { s.SF = math.NaN() }), "--sf must be a scale factor from 0.001 to 100000, got NaN"},
		{"sf Inf", with(func(s *Settings) { s.SF = math.Inf(1) }), "--sf must be a scale factor from 0.001 to 100000, got +Inf"},
		{"negative file rows", with(func(s *Settings) { s.FileRows = -1 }), "--file-rows must be 0 (the default) or more, got -1"},
		{"negative row groups", with(func(s *Settings) { s.RowGroupRows = -2 }), "--row-group-rows must be 0 (the default) or more, got -2"},
	} {
		if _, err := c.s.TPCHOptions(); err == nil || err.Error() != c.want {
			t.Errorf("TPCHOptions, %s: %v; want %q", c.name, err, c.want)
		}
	}
	// Each reads only its own sizes: a tpch dataset has no Rows.
	o, err := with(func(s *Settings) { s.SF = -1 }).Options()
	if err != nil || o.Rows != 100 || o.Files != 4 || o.Seed != 7 || o.Concurrency != 2 || o.validate() != nil {
		t.Errorf("Options: %+v, %v", o, err)
	}
	to, err := with(func(s *Settings) { s.Rows, s.Files = 0, 0 }).TPCHOptions()
	if err != nil || to.SF != 1 || to.Seed != 7 || to.Concurrency != 2 || to.validate() != nil {
		t.Errorf("TPCHOptions: %+v, %v", to, err)
	}
}

// Bind's defaults are the settings of no flags, which Options and
// TPCHOptions both take.
func TestSettingsBind(t *testing.T) {
	var s Settings
	fs := pflag.NewFlagSet("gen", pflag.ContinueOnError)
	s.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if want := (Settings{Rows: 1_000_000, Files: 4, SF: 1, Seed: 1}); s != want {
		t.Errorf("Bind's defaults = %+v, want %+v", s, want)
	}
	if _, err := s.Options(); err != nil {
		t.Errorf("Options() of the defaults: %v", err)
	}
	if _, err := s.TPCHOptions(); err != nil {
		t.Errorf("TPCHOptions() of the defaults: %v", err)
	}
}
