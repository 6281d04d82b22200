package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/internal/emulators"
)

// TestGCS: against fake-gcs-server on a loopback port (the SDK told by
// STORAGE_EMULATOR_HOST, as a user points it at an emulator), the
// commands work on gs:// as on a directory (storeCommands), also through
// the link model; a missing bucket or object is exit 3 and no
// credentials exit 4, each in one line.
func TestGCS(t *testing.T) {
	env := []string{"STORAGE_EMULATOR_HOST=" + emulators.GCS(t, "bkt")}
	storeCommands(t, env, "gs://bkt/", func(query string) map[string][]string {
		return map[string][]string{"run --sim": {"run", "--sim", "ttfb=5ms,stream=50MiB/s", "scan gs://bkt/taxi/" + query}}
	})
	assertBadInputs(t, env, t.TempDir(), []badInput{
		{"a missing object", []string{"cat", "gs://bkt/nope"}, 3, "no object or prefix of this name"},
		{"a missing bucket", []string{"ls", "gs://no-such-bucket/"}, 3, "bucket doesn't exist"},
	})
	// No emulator and no credentials: one line that says where they come from.
	r := sluice(t, []string{"STORAGE_EMULATOR_HOST=", "GOOGLE_APPLICATION_CREDENTIALS=", "HOME=" + t.TempDir(), "CLOUDSDK_CONFIG=" + t.TempDir()}, "ls", "gs://bkt/")
	assertCleanFailure(t, r, 4, "GOOGLE_APPLICATION_CREDENTIALS")
}

// storeCommands checks, with env pointing sluice at a store and base an
// empty prefix there, that cp both ways, ls, run (and the runs extra
// gives for a query), run --workers with the job's objects in the store,
// write, bench and rm --recursive work on it as on a directory, and
// leave nothing behind.
func storeCommands(t *testing.T, env []string, base string, extra func(query string) map[string][]string) {
	t.Helper()
	dir := t.TempDir()
	taxi := filepath.Join(dir, "taxi")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "20000", "--files", "2", "--row-group-rows", "4000", "--out", taxi, "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	if r := sluice(t, env, "cp", taxi+"/", base+"taxi/", "-q"); r.code != 0 {
		t.Fatalf("cp to %s: %+v", base, r)
	}
	if r := sluice(t, env, "ls", base+"taxi/"); r.code != 0 || strings.Count(r.stdout, ".parquet") != 2 {
		t.Errorf("ls: %+v", r)
	}
	query := " | filter \"payment_type <> 'cash'\" | sum-by pickup_date fare_amount | to-csv"
	want := sluice(t, nil, "run", "scan "+taxi+query)
	if want.code != 0 || strings.Count(want.stdout, "\n") < 10 {
		t.Fatalf("local run: %+v", want)
	}
	runs := extra(query)
	runs["run"] = []string{"run", "scan " + base + "taxi/" + query}
	runs["run --workers"] = []string{"run", "--workers", "2", "--piece-size", "64KiB", "--store", base + "jobs/", "scan " + base + "taxi/" + query}
	for name, args := range runs {
		if r := sluice(t, env, args...); r.code != 0 || r.stdout != want.stdout {
			t.Errorf("%s on %s: exit %d, %d bytes (want %d): %s", name, base, r.code, len(r.stdout), len(want.stdout), r.stderr)
		}
	}
	if r := sluice(t, env, "ls", base, "--recursive"); r.code != 0 || strings.Contains(r.stdout, "jobs/") || !strings.Contains(r.stdout, "taxi/") {
		t.Errorf("the job left objects in %s: %+v", base, r)
	}
	// write's output, and bench's objects (written, read, deleted).
	out := base + "out/q.parquet"
	if r := sluice(t, env, "run", "scan "+taxi+" | filter \"payment_type = 'cash'\" | write "+out); r.code != 0 {
		t.Errorf("write to %s: %+v", base, r)
	} else if r := sluice(t, env, "run", "scan "+out+" | count-by payment_type | to-csv"); r.code != 0 || !strings.HasPrefix(r.stdout, "payment_type,count\ncash,") {
		t.Errorf("read back what write wrote: %+v", r)
	}
	if r := sluice(t, env, "bench", base+"scratch/", "-n", "4", "-s", "1MiB", "-c", "2", "--json", "-q"); r.code != 0 || !strings.Contains(r.stdout, "steady_mib_s") {
		t.Errorf("bench: %+v", r)
	}
	if r := sluice(t, env, "ls", base+"scratch/"); r.code != 3 {
		t.Errorf("bench left objects: %+v", r)
	}
	back := filepath.Join(dir, "back")
	if r := sluice(t, env, "cp", base+"taxi/", back+"/", "-q"); r.code != 0 {
		t.Fatalf("cp from %s: %+v", base, r)
	}
	for _, f := range []string{"part-00000.parquet", "part-00001.parquet"} {
		a, _ := os.ReadFile(filepath.Join(taxi, f))
		b, _ := os.ReadFile(filepath.Join(back, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: %d bytes back, %d sent", f, len(b), len(a))
		}
	}
	if r := sluice(t, env, "rm", "--recursive", base+"taxi/"); r.code != 0 || strings.Count(r.stdout, "delete: ") != 2 {
		t.Errorf("rm: %+v", r)
	}
}
