package fanout

import (
	"strings"
	"testing"
)

func TestLastLines(t *testing.T) {
	log := "starting\n\nsluice: read a\nsluice: scan x: row group 0: parquet: bad page\n\n"
	if got, want := LastLines(log, 2), "read a; scan x: row group 0: parquet: bad page"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := LastLines("", 3); got != "" {
		t.Errorf("empty log: %q", got)
	}
}

// FuzzLastLines: whatever a worker logged, its last lines come out as
// one line.
func FuzzLastLines(f *testing.F) {
	for _, s := range []string{"", "\n\n", "sluice: a\nsluice: b\n", "x\r\ny", "\x00\n\xff"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, log string, n int) {
		n = n%8 + 1
		if n < 1 {
			n += 8
		}
		got := LastLines(log, n)
		if strings.Contains(got, "\n") || strings.Count(got, "; ") > strings.Count(log, "; ")+n-1 {
			t.Fatalf("LastLines(%q, %d) = %q", log, n, got)
		}
	})
}
