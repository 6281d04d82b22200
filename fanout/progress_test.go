package fanout

import "testing"

func TestProgressString(t *testing.T) {
	p := Progress{Phase: "map", Tasks: 8, Done: 3, Running: 2, Failed: 1}
	if got, want := p.String(), "map: 3/8 tasks done, 2 running, 1 failed attempts"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
