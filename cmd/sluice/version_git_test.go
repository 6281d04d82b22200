package main

import (
	"os/exec"
	"strings"
	"testing"
)

// Built without a VCS stamp (go run), version still names the commit of
// the checkout the source is in: the same one git names.
func TestGitRevision(t *testing.T) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout here: %v", err)
	}
	if got, want := gitRevision("."), strings.TrimSpace(string(out)); got != want {
		t.Fatalf("gitRevision = %q, git says %q", got, want)
	}
	if got := sourceRevision(); got != strings.TrimSpace(string(out)) {
		t.Fatalf("sourceRevision = %q", got)
	}
}
