package executors

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/fanout"
	"github.com/sluice-data/sluice/gen"
	"github.com/sluice-data/sluice/plan"
	"github.com/sluice-data/sluice/store"
)

// DryRun writes the spec alone, prints each phase's submission and says
// on note where the job is; an executor with nothing to show is refused.
func TestDryRun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, prefix, err := store.Open(ctx, filepath.Join(dir, "data"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := gen.Lineitem(ctx, st, prefix, gen.Options{Rows: 100, Files: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse("scan " + filepath.Join(dir, "data") + " | count-by l_returnflag")
	if err != nil {
		t.Fatal(err)
	}
	jobs := filepath.Join(dir, "jobs")

	local := fanout.Options{Store: jobs, Executor: fanout.NewLocal([]string{"/bin/sluice"})}
	err = DryRun(ctx, &bytes.Buffer{}, &bytes.Buffer{}, "local", p, local)
	if want := "--dry-run: the local executor has no manifest to show"; err == nil || err.Error() != want || !errors.Is(err, ErrInvalid) {
		t.Errorf("local: %v; want ErrInvalid saying %q", err, want)
	}

	exe, err := New(Options{Name: "slurm", DryRun: true}, "/bin/sluice", []string{"worker"})
	if err != nil {
		t.Fatal(err)
	}
	var out, note bytes.Buffer
	if err := DryRun(ctx, &out, &note, "slurm", p, fanout.Options{Store: jobs, Executor: exe}); err != nil {
		t.Fatal(err)
	}
	specs, _ := filepath.Glob(filepath.Join(jobs, "job-*", "job.json"))
	if len(specs) != 1 {
		t.Fatalf("specs written: %q, want one", specs)
	}
	if !strings.HasPrefix(out.String(), "# phase 0 (map): ") || !strings.Contains(out.String(), "\nsbatch ") {
		t.Errorf("output:\n%s", out.String())
	}
	job := filepath.Dir(specs[0]) + "/"
	want := "sluice: --dry-run submitted nothing; it wrote the job's spec, " + job + "job.json, which the workers read.\n" +
		"sluice: submitted by hand, the first phase's tasks run and leave their outputs under " + job + ", which only the driver commits, reads and deletes;\n" +
		"sluice: when done: sluice rm --recursive " + job + "\n"
	if note.String() != want {
		t.Errorf("note:\n%s\nwant:\n%s", note.String(), want)
	}
	if left, _ := os.ReadDir(filepath.Dir(specs[0])); len(left) != 1 {
		t.Errorf("the job's prefix holds %d entries, want the spec alone", len(left))
	}
}
