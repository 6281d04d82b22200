package scan

import (
	"strings"
	"testing"
	"time"
)

// Report is String's lines and the fetch plan's, and the share of a
// modelled link only when there is one.
func TestStatsReport(t *testing.T) {
	s := Stats{Rows: 10, Elapsed: 2 * time.Second, BytesFetched: 100 << 20}
	plain := s.Report(0)
	if want := s.String() + "\n" + s.Fetch.String() + "\n"; plain != want {
		t.Errorf("Report(0) = %q, want %q", plain, want)
	}
	linked := s.Report(100 << 20)
	if want := plain + "link: 50.0 MiB/s of 100.0 MiB/s (50% of the modelled link's capacity)\n"; linked != want {
		t.Errorf("Report(100 MiB/s) = %q, want %q", linked, want)
	}
	s.Elapsed = 0 // nothing measured: no rate to give
	if got := s.Report(100 << 20); strings.Contains(got, "link:") {
		t.Errorf("with no time elapsed: %q", got)
	}
}
