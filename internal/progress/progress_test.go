package progress

import (
	"strings"
	"testing"
	"time"
)

// TestLine: the plain report counts rows or bytes, of a total when known.
func TestLine(t *testing.T) {
	ago := time.Now().Add(-2 * time.Second)
	for _, c := range []struct {
		p    *Bytes
		want string
	}{
		{&Bytes{rows: true, total: 1000, n: 400, start: ago}, "400 of 1000 rows, "},
		{&Bytes{rows: true, total: -1, n: 400, start: ago}, "400 rows, "},
		{&Bytes{total: 4 << 20, n: 1 << 20, start: ago}, "1.0 MiB of 4.0 MiB, "},
		{&Bytes{total: -1, n: 1 << 20, start: ago}, "1.0 MiB, "},
	} {
		if got := c.p.line(); !strings.HasPrefix(got, c.want) || !strings.HasSuffix(got, "/s") {
			t.Errorf("%q, want %q...", got, c.want)
		}
	}
}
