package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/store"
)

// The command lines that sluice hands to sluice-full: a gs:// or Azure URL
// anywhere (a pipeline's text too), the kubernetes executor, sluice report
// and bench --plot, but not what follows exec's "--", another program's
// command line, nor a file named report.
func TestNeedsFull(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ls", "gs://b/"}, "gs:// URLs"},
		{[]string{"run", "scan gs://b/t | head 3 | show"}, "gs:// URLs"},
		{[]string{"cp", "./x/", "gs://b/x/", "-q"}, "gs:// URLs"},
		{[]string{"ls", "az://c/"}, "Azure URLs"},
		{[]string{"run", "scan abfss://c@a.dfs.core.windows.net/t | show"}, "Azure URLs"},
		{[]string{"cp", "abfs://c@a.dfs.core.windows.net/x", "./x"}, "Azure URLs"},
		{[]string{"exec", "--", "prog", "az://c/x"}, ""},
		{[]string{"run", "--workers", "2", "--executor", "kubernetes", "--image", "i", "scan s3://b/t"}, "the kubernetes executor"},
		{[]string{"bench", "--executor=kubernetes", "s3://b/"}, "the kubernetes executor"},
		{[]string{"run", "--executor", "slurm", "--workers", "2", "scan s3://b/t"}, ""},
		{[]string{"run", "scan s3://b/t | show"}, ""},
		{[]string{"exec", "--", "prog", "gs://b/x", "--executor", "kubernetes"}, ""},
		{[]string{"cp", "--", "./-x", "gs://b/x"}, "gs:// URLs"},
		{[]string{"ls", "--", "gs://b/"}, "gs:// URLs"},
		{[]string{"bench", "s3://b/", "--plot", "p.png"}, "plots"},
		{[]string{"bench", "s3://b/", "--plot=p.png"}, "plots"},
		{[]string{"report", "events.jsonl", "-o", "r.html"}, "reports"},
		{[]string{"--sim", "s3", "report", "events.jsonl", "-o", "r.png"}, "reports"},
		{[]string{"help", "report"}, ""},
		{[]string{"run", "--events", "report", "scan x | show"}, ""},
		{[]string{"--executor"}, ""},
		{nil, ""},
	} {
		if got := needsFull(newRootCommand(), c.args); got != c.want {
			t.Errorf("needsFull(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// Forwarded: sluice's kubernetes dry run is sluice-full's (sluice links no
// kubernetes executor), whose pods run sluice-full; a stale forwarded-by
// in the environment does not stop it.
func TestForwardToFull(t *testing.T) {
	data := filepath.Join(t.TempDir(), "taxi")
	if r := sluice(t, nil, "gen", "taxi", "--rows", "100", "--files", "1", "--out", data, "-q"); r.code != 0 {
		t.Fatalf("gen: %+v", r)
	}
	// A forwarded-by left in the environment is replaced, not kept.
	r := sluice(t, []string{forwardedEnv + "=stale"}, "run", "--workers", "2", "--executor", "kubernetes", "--image", "img:1", "--dry-run",
		"--store", "file://"+t.TempDir()+"/", "scan "+data+" | count-by payment_type | show")
	if r.code != 0 || !strings.Contains(r.stdout, "- sluice-full\n") || !strings.Contains(r.stdout, "- worker\n") {
		t.Errorf("kubernetes dry run through sluice: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// Without sluice-full beside it or on PATH, sluice says in one line what
// to install, as it does when what it finds is another sluice; a
// sluice-full run by another build of sluice refuses.
func TestForwardFails(t *testing.T) {
	dir := t.TempDir()
	alone := filepath.Join(dir, "sluice")
	if err := os.Link(sluiceBin, alone); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCmd(t, "", []string{"PATH=" + dir}, alone, "ls", "gs://b/")
	assertCleanFailure(t, result{string(out), stderr, code}, 1, "for gs:// URLs sluice runs sluice-full, but it is neither beside sluice nor on PATH (CGO_ENABLED=0 go install ")

	// A sluice in sluice-full's place refuses instead of running itself
	// again and again.
	if err := os.Link(sluiceBin, filepath.Join(dir, "sluice-full")); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = runCmd(t, "", []string{"PATH=" + dir}, alone, "ls", "gs://b/")
	assertCleanFailure(t, result{string(out), stderr, code}, 1, "/sluice-full is sluice, not sluice-full: install sluice-full (CGO_ENABLED=0 go install ")

	full := filepath.Join(filepath.Dir(sluiceBin), "sluice-full")
	out, stderr, code = runCmd(t, "", []string{forwardedEnv + "=sluice v0.0.1 0123456789ab go1.26.8 linux/amd64"}, full, "version")
	assertCleanFailure(t, result{string(out), stderr, code}, 1, "are different builds: install both from one version")
	// Run by this build, it runs.
	if out, err := exec.Command(sluiceBin, "version").Output(); err != nil {
		t.Fatal(err)
	} else if got, _, code := runCmd(t, "", []string{forwardedEnv + "=" + strings.TrimSpace(string(out))}, full, "version"); code != 0 || string(got) != string(out) {
		t.Errorf("sluice-full version forwarded by this build: exit %d, %q, want %q", code, got, out)
	}
}

// A gs:// or Azure URL that reaches sluice's stores without being on its
// command line is a usage error that names sluice-full.
func TestSchemesInFull(t *testing.T) {
	for _, scheme := range fullSchemes {
		store.RegisterScheme(scheme, inFull(scheme))
		_, _, err := store.Open(context.Background(), scheme+"://b/k", store.Options{})
		if store.KindOf(err) != store.KindInvalid || !strings.Contains(err.Error(), scheme+":// is read by sluice-full") ||
			!strings.Contains(err.Error(), "run this command with sluice-full") {
			t.Errorf("%s:// in sluice: %v (kind %v)", scheme, err, store.KindOf(err))
		}
	}
}

// sluice links neither gs://, az://, the kubernetes executor nor the
// plotting library (what sluice-full is for); sluice-full links them all.
func TestLeanLinks(t *testing.T) {
	heavy := []string{"cloud.google.com/go/storage", "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob",
		"k8s.io/client-go/rest", "github.com/sluice-data/sluice/fanout/kubernetes", "gonum.org/v1/plot"}
	for _, prog := range []string{"sluice", "sluice-full"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/sluice-data/sluice/cmd/"+prog).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", prog, err)
		}
		deps := map[string]bool{}
		for _, p := range strings.Fields(string(out)) {
			deps[p] = true
		}
		for _, h := range heavy {
			if deps[h] != (prog == "sluice-full") {
				t.Errorf("%s links %s: %v", prog, h, deps[h])
			}
		}
	}
}
