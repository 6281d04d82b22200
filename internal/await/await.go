// Package await lets a test wait for an event that the code under test
// does not announce (a state reached, a file written by another process,
// a goroutine blocked), so that tests depend on events and not on how
// long a busy machine takes. Prefer a channel or a hook when the code
// offers one; this is for when it does not.
package await

import (
	"testing"
	"time"
)

// Within bounds every wait: only a broken test gets there, so it is far
// longer than any event takes on a loaded machine.
const Within = time.Minute

// Until polls cond every millisecond until it holds, and fails t, naming
// what it waited for, if it does not within Within.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, Within)
		}
		time.Sleep(time.Millisecond) // the polling interval
	}
}
