package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGenTPCH generates SF 0.01 with the CLI and queries it with run: the
// tables are where a user looks for them, and their keys join.
func TestGenTPCH(t *testing.T) {
	dir := t.TempDir()
	r := sluice(t, nil, "gen", "tpch", "--sf", "0.01", "--out", dir, "-q")
	if r.code != 0 {
		t.Fatalf("gen tpch: %+v", r)
	}
	if !strings.Contains(r.stdout, "generated tpch sf 0.01") || !strings.Contains(r.stdout, "orders          15000 rows") {
		t.Errorf("summary: %q", r.stdout)
	}
	for _, table := range []string{"region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"} {
		files, _ := filepath.Glob(filepath.Join(dir, table, "part-*.parquet"))
		if len(files) == 0 {
			t.Errorf("no files in %s/%s", dir, table)
		}
	}

	r = sluice(t, nil, "run", "scan "+filepath.Join(dir, "orders")+" | count-by o_orderstatus | sort --by o_orderstatus | to-csv")
	if r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || lines[0] != "o_orderstatus,count" || !strings.HasPrefix(lines[1], "F,") ||
		!strings.HasPrefix(lines[2], "O,") || !strings.HasPrefix(lines[3], "P,") {
		t.Errorf("order statuses:\n%s", r.stdout)
	}

	// Every line's order exists: an anti join finds none missing.
	r = sluice(t, nil, "run", "scan "+filepath.Join(dir, "lineitem")+" | join "+filepath.Join(dir, "orders")+
		" --on l_orderkey=o_orderkey --how anti | select l_orderkey | to-csv")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "l_orderkey" {
		t.Errorf("lines without an order: %+v", r)
	}
}

func TestGenTPCHBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "tpch")
	assertBadInputs(t, nil, dir, []badInput{
		{"zero sf", []string{"gen", "tpch", "--sf", "0", "--out", out}, 2, "--sf"},
		{"negative sf", []string{"gen", "tpch", "--sf", "-1", "--out", out}, 2, "--sf"},
		{"rows", []string{"gen", "tpch", "--rows", "10", "--out", out}, 2, "--rows"},
		{"sf for lineitem", []string{"gen", "lineitem", "--sf", "1", "--out", out}, 2, "--sf"},
		{"unknown dataset", []string{"gen", "tpcds", "--out", out}, 2, "tpch"},
	})
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s created", out)
	}
}
