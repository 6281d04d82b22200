// Package testenv holds what tests share about their environment.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Unavailable stops a test that lacks what it needs (a server, test
// files): in CI (CI=true) it fails, as a skip there would hide that the
// test never ran; elsewhere it skips, saying what was missing.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: CI must run this test", msg)
	}
	t.Skip(msg)
}
