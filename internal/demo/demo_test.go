package demo

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// The demo tells its whole story in 80 columns: the endpoint, the files
// written, both readers' figures and the ratio; the data it wrote is gone
// unless kept.
func TestRun(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var out bytes.Buffer
	if err := Run(context.Background(), &out, Options{Rows: 20000, Files: 2, Runs: 1, Concurrency: 64}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for i, line := range strings.Split(s, "\n") {
		if n := utf8.RuneCountInString(line); n > 80 {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, line)
		}
	}
	for _, want := range []string{
		"   http://127.0.0.1:",
		"2. Writing 20,000 rows of TPC-H lineitem",
		"to s3://demo/lineitem/ as 2 Parquet files...",
		"part-00000.parquet\n",
		"part-00001.parquet\n",
		"arrow-go's plain Parquet reader",
		"link (one run each).\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if !regexp.MustCompile(`\n   reading( \.)+\n`).MatchString(s) {
		t.Errorf("no progress dots:\n%s", s)
	}
	if !regexp.MustCompile(`\nsluice read it [0-9]+\.[0-9]x faster than a plain Parquet reader`).MatchString(s) {
		t.Errorf("no closing ratio:\n%s", s)
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestRunKeep(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var out bytes.Buffer
	if err := Run(context.Background(), &out, Options{Rows: 1000, Files: 1, Runs: 2, Keep: true, Quiet: true, Concurrency: 8}); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`The data is kept in (\S+)\n$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("does not say where the data is:\n%s", out.String())
	}
	if _, err := os.Stat(m[1] + "/demo/lineitem/part-00000.parquet"); err != nil {
		t.Errorf("the kept data: %v", err)
	}
	if strings.Contains(out.String(), "reading") {
		t.Errorf("quiet, yet progress:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "link (median of 2 runs each).\n") {
		t.Errorf("runs not said:\n%s", out.String())
	}
}

func TestRunRefusesNothing(t *testing.T) {
	if err := Run(context.Background(), &bytes.Buffer{}, Options{Rows: 0, Files: 1, Runs: 1}); err == nil {
		t.Fatal("no error for zero rows")
	}
}
