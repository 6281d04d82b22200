package fanout

import (
	"context"
	"errors"
	"testing"

	"github.com/spf13/pflag"

	"github.com/sluice-data/sluice/exec"
)

func TestSettingsApply(t *testing.T) {
	good := Settings{PieceSize: "64MiB", Broadcast: "256MiB", Join: JoinAuto}
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
		{"negative spread", with(func(s *Settings) { s.Spread = -1 }), "--spread -1: want 0 (one prefix a task) to 256"},
		{"spread past the most", with(func(s *Settings) { s.Spread = 257 }), "--spread 257: want 0 (one prefix a task) to 256"},
		{"bad piece size", with(func(s *Settings) { s.PieceSize = "xx" }), `--piece-size "xx": want a size such as 64MiB`},
		{"no piece size", with(func(s *Settings) { s.PieceSize = "0" }), `--piece-size "0": want a size such as 64MiB`},
		{"bad memory", with(func(s *Settings) { s.Memory = "xx" }), `--memory "xx": a size such as 512MiB`},
		{"no memory", with(func(s *Settings) { s.Memory = "0" }), `--memory "0": a size such as 512MiB`},
		{"bad broadcast", with(func(s *Settings) { s.Broadcast = "xx" }), `--broadcast "xx": a size such as 64MiB, or 0 for never`},
		{"negative broadcast", with(func(s *Settings) { s.Broadcast = "-1" }), `--broadcast "-1": a size such as 64MiB, or 0 for never`},
		{"unknown join", with(func(s *Settings) { s.Join = "bogus" }), `--join "bogus": auto, broadcast or partitioned`},
		{"no join", with(func(s *Settings) { s.Join = "" }), `--join "": auto, broadcast or partitioned`},
	} {
		var o Options
		if err := c.s.Apply(&o); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}

	var o Options
	s := Settings{Spread: 16, PieceSize: "1MiB", Memory: "512MiB", Broadcast: "0", Join: JoinPartitioned}
	if err := s.Apply(&o); err != nil || o.Spread != 16 || o.PieceBytes != 1<<20 || o.Memory != 512<<20 || o.Broadcast != -1 || o.Join != JoinPartitioned {
		t.Errorf("Apply(%+v): %+v, %v", s, o, err)
	}
	o = Options{Memory: 7}
	if err := good.Apply(&o); err != nil || o.Memory != 7 || o.Broadcast != 256<<20 {
		t.Errorf("Apply(%+v) without --memory: %+v, %v; want Memory kept", good, o, err)
	}
}

// MemoryBytes reads --memory as Apply does: unset is 0, the default.
func TestSettingsMemoryBytes(t *testing.T) {
	for _, c := range []struct {
		memory string
		want   int64
		err    string
	}{
		{"", 0, ""},
		{"512MiB", 512 << 20, ""},
		{"1", 1, ""},
		{"0", 0, `--memory "0": a size such as 512MiB`},
		{"xx", 0, `--memory "xx": a size such as 512MiB`},
		{"-1MiB", 0, `--memory "-1MiB": a size such as 512MiB`},
	} {
		m, err := Settings{Memory: c.memory}.MemoryBytes()
		if m != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("MemoryBytes(%q) = %d, %v; want %d, %q", c.memory, m, err, c.want, c.err)
		}
	}
}

// Bind's defaults are the settings of no flags, which Apply takes.
func TestSettingsBind(t *testing.T) {
	var s Settings
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	s.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if want := (Settings{PieceSize: "64MiB", Broadcast: "256MiB", Join: JoinAuto}); s != want {
		t.Errorf("Bind's defaults = %+v, want %+v", s, want)
	}
	var o Options
	if err := s.Apply(&o); err != nil || o.Spread != 0 || o.PieceBytes != 64<<20 || o.Memory != 0 || o.Broadcast != 256<<20 || o.Join != JoinAuto {
		t.Errorf("Apply of the defaults: %+v, %v", o, err)
	}
}

// Run and DryRun refuse what they would otherwise take for something
// else, before doing anything.
func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Spread: -1}, "--spread -1: want 0 (one prefix a task) to 256"},
		{Options{Spread: MaxSpread + 1}, "--spread 257: want 0 (one prefix a task) to 256"},
		{Options{Join: "hash"}, `--join "hash": auto, broadcast or partitioned`},
	} {
		if err := c.o.Validate(); err == nil || err.Error() != c.want {
			t.Errorf("Validate(%+v): %v; want %q", c.o, err, c.want)
		}
		want := "invalid pipeline: " + c.want
		if err := Run(context.Background(), nil, c.o); err == nil || err.Error() != want || !errors.Is(err, exec.ErrInvalid) {
			t.Errorf("Run(%+v): %v; want exec.ErrInvalid saying %q", c.o, err, want)
		}
		if _, _, err := DryRun(context.Background(), nil, c.o, nil); err == nil || err.Error() != want || !errors.Is(err, exec.ErrInvalid) {
			t.Errorf("DryRun(%+v): %v; want exec.ErrInvalid saying %q", c.o, err, want)
		}
	}
	for _, o := range []Options{{}, {Spread: MaxSpread, Join: JoinBroadcast}, {Spread: 1, Join: JoinAuto}} {
		if err := o.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", o, err)
		}
	}
}
