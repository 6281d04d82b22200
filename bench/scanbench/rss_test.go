package scanbench

import (
	"bytes"
	"strings"
	"testing"
)

func TestRSSReport(t *testing.T) {
	if got := RSSBudget(1 << 30); got != 256<<20 {
		t.Errorf("RSSBudget(1GiB) = %d, want 256MiB", got)
	}
	if got := RSSBudget(1 << 20); got != 1<<20 {
		t.Errorf("RSSBudget(1MiB) = %d, want the 1MiB floor", got)
	}
	for _, c := range []struct {
		peak int64
		want string
	}{{100 << 20, "within"}, {200 << 20, "OVER"}} {
		var b bytes.Buffer
		(&RSS{Budget: 64 << 20, PeakRSS: c.peak, Limit: 64<<20 + RSSSlack, Seconds: 1.5}).Print(&b, 1<<30)
		if !strings.Contains(b.String(), c.want+" budget + 64 MiB = 128.0 MiB") || !strings.Contains(b.String(), "--memory 64MiB over 1024.0 MiB") {
			t.Errorf("peak %d: %q", c.peak, b.String())
		}
	}
}

func TestLineitemRowsRoundsToMillions(t *testing.T) {
	for _, c := range []struct{ size, rows int64 }{{1 << 30, 33_000_000}, {34, 1_000_000}, {33_300_000, 1_000_000}} {
		if got := LineitemRows(c.size); got != c.rows {
			t.Errorf("LineitemRows(%d) = %d, want %d", c.size, got, c.rows)
		}
	}
}
