// Package fidelity gates the tests whose claims are about wall-clock
// time: how closely the link model delivers its profile's bandwidth and
// latency, how soon a straggler is overtaken, where an automatic search
// stops. On a busy machine such a claim fails for reasons that are not
// bugs, so these tests run only when asked for, as a fidelity check:
//
//	SLUICE_FIDELITY=1 go test ./sim ./collect ./bench -run Fidelity -v
//
// on an otherwise idle machine. Unit tests check behaviour by events.
package fidelity

import (
	"os"
	"testing"
)

// Env is the variable that turns the fidelity tests on.
const Env = "SLUICE_FIDELITY"

// Require skips t unless Env is set.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skipf("a wall-clock fidelity check: run with %s=1 on an idle machine", Env)
	}
}

// On says whether Env is set, for a test that checks behaviour always
// and its timing only in a fidelity run.
func On() bool { return os.Getenv(Env) != "" }
