package fanout

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/exec"
	"github.com/sluice-data/sluice/store"
)

// A kept job is listed with its phases, all committed, and its objects;
// RemoveJob deletes it whole, and refuses what is not a job's prefix.
func TestJobsListAndRemove(t *testing.T) {
	taxi := testData(t)
	jobs := t.TempDir()
	opts := testOptions(jobs)
	opts.Keep, opts.PieceBytes = true, 64<<20
	p := mustPlan(t, "S "+taxi)
	rows(t, func(env exec.Env) error { opts.Env = env; return Run(context.Background(), p, opts) })

	ctx := context.Background()
	st, prefix, err := store.Open(ctx, jobs, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	list, err := Jobs(ctx, st, prefix)
	if err != nil {
		t.Fatal(err)
	}
	left := objects(t, jobs)
	if len(list) != 1 || list[0].Phases != 2 || list[0].Committed != 2 || list[0].Objects != len(left) || list[0].Bytes <= 0 || list[0].Created.IsZero() {
		t.Fatalf("jobs %+v; %d objects under the store", list, len(left))
	}
	if !strings.HasSuffix(list[0].URL, "/"+list[0].ID+"/") {
		t.Errorf("job URL %s, ID %s", list[0].URL, list[0].ID)
	}
	if err := RemoveJob(ctx, nil, strings.TrimSuffix(list[0].URL, list[0].ID+"/")); err == nil || !strings.Contains(err.Error(), "not a job's prefix") {
		t.Fatalf("removing the store's root: %v", err)
	}
	if err := RemoveJob(ctx, nil, list[0].URL); err != nil {
		t.Fatal(err)
	}
	if left := objects(t, jobs); len(left) != 0 {
		t.Fatalf("left after RemoveJob: %q", left)
	}
	if list, err := Jobs(ctx, st, prefix); err != nil || len(list) != 0 {
		t.Fatalf("after RemoveJob: %+v, %v", list, err)
	}
}
