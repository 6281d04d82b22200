package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// TestJoinBadInput: mistakes in a join are one line naming the stage and
// the side, exit 2, and nothing written.
func TestJoinBadInput(t *testing.T) {
	dir := pipeData(t)
	taxi := filepath.Join(dir, "taxi")
	out := t.TempDir()
	dst := filepath.Join(out, "o.parquet")
	join := func(rest string) []string {
		return []string{"run", "scan " + taxi + " | join " + rest + " | write " + dst}
	}
	assertBadInputs(t, nil, out, []badInput{
		{"mismatched key types", join("(scan " + taxi + " | rename pickup_date=d) --on payment_type=d"), exitUsage, "join --on: key payment_type is a string on the left side and d is date32 on the right side"},
		{"unknown left column", join("(scan " + taxi + ") --on nope=payment_type"), exitUsage, `join (left side): no column "nope"`},
		{"unknown right column", join("(scan " + taxi + ") --on payment_type=nope"), exitUsage, `join (right side): no column "nope"`},
		{"malformed nested pipeline", join("(scan " + taxi + " | filter 'x >') --on payment_type"), exitUsage, "join (scan"},
		{"unclosed", join("(scan " + taxi + " --on payment_type"), exitUsage, "unclosed ("},
		{"name on both sides", join("(scan " + taxi + ") --on payment_type"), exitUsage, `join: column "vendor_id" is on both sides`},
		{"bad where", join("(scan " + taxi + ") --on payment_type --prefix r_ --where 'nope > 1'"), exitUsage, `join --where: at position 1 of "nope > 1": no column "nope"`},
		{"no other side", join("--on payment_type"), exitUsage, "join: no other side"},
		{"right side missing", join(filepath.Join(dir, "nothing") + " --on payment_type"), exitNotFound, "join (right side): scan: nothing to read at"},
		{"command with bad side", []string{"join", "scan " + taxi + " | nope", "--on", "k"}, exitUsage, `unknown stage "nope"`},
	})
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("a failed join wrote %s", dst)
	}
}
