package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/internal/emulators"
)

// TestAzure: against the Azurite ./scripts/test starts (its connection
// string in AZURE_STORAGE_CONNECTION_STRING, as a user gives theirs),
// cp both ways, ls, scan, run, run --workers with the job's objects in
// the container, the abfss:// form of the same URL, and rm work on az://
// as on a directory; a missing container or blob is exit 3 in one line,
// and no credentials exit 4.
func TestAzure(t *testing.T) {
	cs, ctr := emulators.Azure(t, "cli")
	env := []string{"AZURE_STORAGE_CONNECTION_STRING=" + cs}
	az := "az://" + ctr + "/"

	dir := t.TempDir()
	taxi := filepath.Join(dir, "taxi")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "20000", "--files", "2", "--row-group-rows", "4000", "--out", taxi, "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	if r := sluice(t, env, "cp", taxi+"/", az+"taxi/", "-q"); r.code != 0 {
		t.Fatalf("cp to az://: %+v", r)
	}
	if r := sluice(t, env, "ls", az+"taxi/"); r.code != 0 || strings.Count(r.stdout, ".parquet") != 2 {
		t.Errorf("ls: %+v", r)
	}
	query := " | filter \"payment_type <> 'cash'\" | sum-by pickup_date fare_amount | to-csv"
	want := sluice(t, nil, "run", "scan "+taxi+query)
	if want.code != 0 || strings.Count(want.stdout, "\n") < 10 {
		t.Fatalf("local run: %+v", want)
	}
	abfss := "abfss://" + ctr + "@devstoreaccount1.dfs.core.windows.net/taxi/"
	for name, args := range map[string][]string{
		"run":           {"run", "scan " + az + "taxi/" + query},
		"run abfss://":  {"run", "scan " + abfss + query},
		"run --workers": {"run", "--workers", "2", "--piece-size", "64KiB", "--store", az + "jobs/", "scan " + az + "taxi/" + query},
	} {
		if r := sluice(t, env, args...); r.code != 0 || r.stdout != want.stdout {
			t.Errorf("%s on Azure: exit %d, %d bytes (want %d): %s", name, r.code, len(r.stdout), len(want.stdout), r.stderr)
		}
	}
	if r := sluice(t, env, "ls", az, "--recursive"); r.code != 0 || strings.Contains(r.stdout, "jobs/") || !strings.Contains(r.stdout, "taxi/") {
		t.Errorf("the job left objects in the container: %+v", r)
	}
	// write's output, and bench's objects (written, read, deleted).
	out := az + "out/q.parquet"
	if r := sluice(t, env, "run", "scan "+taxi+" | filter \"payment_type = 'cash'\" | write "+out); r.code != 0 {
		t.Errorf("write to az://: %+v", r)
	} else if r := sluice(t, env, "run", "scan "+out+" | count-by payment_type | to-csv"); r.code != 0 || !strings.HasPrefix(r.stdout, "payment_type,count\ncash,") {
		t.Errorf("read back what write wrote: %+v", r)
	}
	if r := sluice(t, env, "bench", az+"scratch/", "-n", "4", "-s", "1MiB", "-c", "2", "--json", "-q"); r.code != 0 || !strings.Contains(r.stdout, "steady_mib_s") {
		t.Errorf("bench: %+v", r)
	}
	if r := sluice(t, env, "ls", az+"scratch/"); r.code != 3 {
		t.Errorf("bench left objects: %+v", r)
	}
	back := filepath.Join(dir, "back")
	if r := sluice(t, env, "cp", az+"taxi/", back+"/", "-q"); r.code != 0 {
		t.Fatalf("cp from az://: %+v", r)
	}
	for _, f := range []string{"part-00000.parquet", "part-00001.parquet"} {
		a, _ := os.ReadFile(filepath.Join(taxi, f))
		b, _ := os.ReadFile(filepath.Join(back, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: %d bytes back, %d sent", f, len(b), len(a))
		}
	}
	if r := sluice(t, env, "rm", "--recursive", az+"taxi/"); r.code != 0 || strings.Count(r.stdout, "delete: ") != 2 {
		t.Errorf("rm: %+v", r)
	}
	assertBadInputs(t, env, t.TempDir(), []badInput{
		{"a missing blob", []string{"cat", az + "nope"}, 3, "no object or prefix of this name"},
		{"a missing container", []string{"ls", "az://no-such-container/"}, 3, "ContainerNotFound"},
	})
	r := sluice(t, []string{"AZURE_STORAGE_CONNECTION_STRING=", "AZURE_STORAGE_ACCOUNT=", "AZURE_STORAGE_KEY="}, "ls", az)
	assertCleanFailure(t, r, 4, "AZURE_STORAGE_CONNECTION_STRING")
}

// TestAzureNoCredentials: with an account but no key, connection string
// or Azure identity, the first request fails in one line that says where
// credentials come from, exit 4.
func TestAzureNoCredentials(t *testing.T) {
	home := t.TempDir()
	r := sluice(t, []string{"AZURE_STORAGE_CONNECTION_STRING=", "AZURE_STORAGE_KEY=", "AZURE_STORAGE_ACCOUNT=nosuchaccount",
		"AZURE_CLIENT_ID=", "AZURE_TENANT_ID=", "AZURE_CLIENT_SECRET=", "AZURE_FEDERATED_TOKEN_FILE=", "HOME=" + home, "AZURE_CONFIG_DIR=" + home},
		"ls", "az://ctr/")
	assertCleanFailure(t, r, 4, "no Azure credentials")
}
