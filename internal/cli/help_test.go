package cli

import (
	"net"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Shared mechanics are help topics; the two servers have names that
// cannot be confused, the old ones kept as aliases; a mistyped command
// is a usage error that suggests the right one.
func TestHelpTopicsAndNames(t *testing.T) {
	for topic, want := range map[string]string{"pipes": "shared memory", "urls": "store.Resolve", "sim": "reqlimit=3500:5500",
		"fanout": "--dry-run submits nothing", "bench-figures": "steady state"} {
		r := sluice(t, nil, "help", topic)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("help %s: exit %d, %q lacks %q", topic, r.code, r.stdout, want)
		}
	}
	if r := sluice(t, nil, "--help"); !strings.Contains(r.stdout, "Additional help topics") || strings.Contains(r.stdout, "reqshare") {
		t.Errorf("sluice --help lists no topics, or spells out --sim: %s", r.stdout)
	}
	if r := sluice(t, nil, "select", "--help"); strings.Count(r.stdout, "\n") > 25 || !strings.HasPrefix(r.stdout, "Keep the named columns") {
		t.Errorf("select --help, %d lines:\n%s", strings.Count(r.stdout, "\n"), r.stdout)
	}
	// The long helps keep what a user needs first; the rest is in topics.
	for _, c := range []string{"run", "bench"} {
		if r := sluice(t, nil, c, "--help"); r.code != 0 || strings.Count(r.stdout, "\n") > 110 || !strings.Contains(r.stdout, "sluice help ") {
			t.Errorf("%s --help: %d lines, no topic named", c, strings.Count(r.stdout, "\n"))
		}
	}
	for alias, name := range map[string]string{"serve": "serve-flight", "server": "serve-s3"} {
		if r := sluice(t, nil, alias, "--help"); r.code != 0 || !strings.Contains(r.stdout, "sluice "+name) {
			t.Errorf("%s --help does not show %s: %s", alias, name, r.stdout)
		}
	}
	assertCleanFailure(t, sluice(t, nil, "scna", "./x"), exitUsage, "did you mean scan?")

	// Flag descriptions wrap: off a terminal, to 100 columns.
	for _, c := range newRootCommand().Commands() {
		if c.Hidden || !c.IsAvailableCommand() {
			continue
		}
		r := sluice(t, nil, c.Name(), "--help")
		_, flags, ok := strings.Cut(r.stdout, "\nFlags:\n")
		if r.code != 0 || !ok {
			t.Errorf("%s --help: exit %d, no flags", c.Name(), r.code)
			continue
		}
		for _, line := range strings.Split(flags, "\n") {
			if len(line) > 100 {
				t.Errorf("%s --help: a flag line of %d columns: %q", c.Name(), len(line), line)
			}
		}
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	assertCleanFailure(t, sluice(t, nil, "serve-s3", "--dir", t.TempDir(), "--addr", taken.Addr().String()), exitUsage, "is taken")
}

// TestEveryHelpFileIsShown: each file under help/ reaches some command's
// help, and no {{...}} is left unexpanded.
func TestEveryHelpFileIsShown(t *testing.T) {
	var shown strings.Builder
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		shown.WriteString(c.Long + "\n" + c.Example + "\n")
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	if strings.Contains(shown.String(), "{{") {
		t.Errorf("a help text keeps a {{...}} reference")
	}
	files, err := helpFiles.ReadDir("help")
	if err != nil || len(files) < 30 {
		t.Fatalf("help files: %d, %v", len(files), err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".txt")
		if !strings.Contains(shown.String(), helpText(name)) {
			t.Errorf("help/%s is in no command's help", f.Name())
		}
	}
}
