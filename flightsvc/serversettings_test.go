package flightsvc

import (
	"errors"
	"testing"

	"github.com/spf13/pflag"
)

func TestServerSettingsOptions(t *testing.T) {
	ok := ServerSettings{Memory: "64MiB", Concurrency: 2, PieceSize: "64MiB"}
	for _, c := range []struct {
		edit func(*ServerSettings)
		want string
	}{
		{func(s *ServerSettings) { s.Memory = "x" }, `--memory: bad size "x": want a number with an optional unit, such as 16MiB (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)`},
		{func(s *ServerSettings) { s.Memory = "1KiB" }, "--memory 1KiB: want at least 1MiB"},
		{func(s *ServerSettings) { s.Concurrency = 0 }, "--concurrency 0: want at least 1"},
		{func(s *ServerSettings) { s.PieceSize = "-1" }, `--piece-size: bad size "-1": must not be negative`},
		{func(s *ServerSettings) { s.PieceSize = "0" }, "--piece-size: want at least 1B"},
		// The first mistake is the one told.
		{func(s *ServerSettings) { s.Concurrency, s.PieceSize = -1, "0" }, "--concurrency -1: want at least 1"},
	} {
		s := ok
		c.edit(&s)
		_, err := s.Options()
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v; want ErrInvalid saying %q", s, err, c.want)
		}
	}
	o, err := ServerSettings{Token: "t", Memory: "1MiB", Concurrency: 3, PieceSize: "1"}.Options()
	if err != nil || o != (ServerOptions{Token: "t", Memory: 1 << 20, Concurrency: 3, PieceBytes: 1}) {
		t.Errorf("Options() = %+v, %v", o, err)
	}
}

// Bind's defaults are ServerOptions' own: 64 MiB a stream, two row groups
// at once, 64 MiB endpoints, no token.
func TestServerSettingsBind(t *testing.T) {
	var s ServerSettings
	fs := pflag.NewFlagSet("serve-flight", pflag.ContinueOnError)
	s.Bind(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	o, err := s.Options()
	if err != nil || o != (ServerOptions{Memory: 64 << 20, Concurrency: 2, PieceBytes: 64 << 20}) {
		t.Errorf("Options() of the defaults = %+v, %v", o, err)
	}
	if err := fs.Parse([]string{"--token", "t", "--piece-size", "1MiB"}); err != nil || s.Token != "t" || s.PieceSize != "1MiB" {
		t.Errorf("--token t --piece-size 1MiB: %+v, %v", s, err)
	}
}
