package fanout

import "testing"

// The first phase's manifest stands as it is; each later one is commented
// out, line by line, under the reason, after the separator.
func TestDryRunText(t *testing.T) {
	docs := [][]byte{[]byte("kind: Job\nname: p0\n"), []byte("kind: Job\nname: p1\n"), []byte("name: p2\n")}
	want := "kind: Job\nname: p0\n" +
		"---\n# phase 1 runs once the driver has committed phase 0 (sluice run, without --dry-run); not on its own:\n" +
		"# kind: Job\n# name: p1\n" +
		"---\n# phase 2 runs once the driver has committed phase 1 (sluice run, without --dry-run); not on its own:\n" +
		"# name: p2\n"
	if got := DryRunText(docs, "---\n"); got != want {
		t.Errorf("DryRunText:\n%s\nwant:\n%s", got, want)
	}
	if got, want := DryRunText(docs[:1], "---\n"), "kind: Job\nname: p0\n"; got != want {
		t.Errorf("one phase: %q, want %q", got, want)
	}
	if got, want := DryRunText([][]byte{[]byte("a\n"), []byte("b\n")}, ""), "a\n# phase 1 runs once the driver has committed phase 0 (sluice run, without --dry-run); not on its own:\n# b\n"; got != want {
		t.Errorf("no separator: %q, want %q", got, want)
	}
}
