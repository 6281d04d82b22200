package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-data/sluice/fanout"
)

func TestIndexList(t *testing.T) {
	for _, c := range []struct {
		idx  []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3, 5, 7, 8, 9}, "0-3,5,7-9"},
		{[]int{2, 4, 6}, "2,4,6"},
	} {
		if got := indexList(c.idx); got != c.want {
			t.Errorf("indexList(%v) = %q, want %q", c.idx, got, c.want)
		}
	}
}

// FuzzIndexList: any ascending, distinct indexes are written as a list
// whose numbers, ranges expanded, are those indexes.
func FuzzIndexList(f *testing.F) {
	for _, s := range []string{"", "\x00\x01\x02\x05", "\x07", "\x00\x02\x04"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var idx []int
		seen := map[int]bool{}
		for i := range 256 {
			if strings.IndexByte(string(b), byte(i)) >= 0 && !seen[i] {
				seen[i] = true
				idx = append(idx, i)
			}
		}
		list := indexList(idx)
		n := 0
		if list != "" {
			for _, r := range strings.Split(list, ",") {
				var lo, hi int
				if k, _ := fmt.Sscanf(r, "%d-%d", &lo, &hi); k == 2 {
					n += hi - lo + 1
				} else {
					n++
				}
			}
		}
		if n != len(idx) || strings.Contains(list, " ") {
			t.Fatalf("indexList(%v) = %q holds %d indexes", idx, list, n)
		}
	})
}

// A Manifest's sbatch line is a comment; Runnable makes it the command,
// the batch script its here-document, and changes nothing else.
func TestRunnable(t *testing.T) {
	s := New([]string{"/opt/sluice", "worker"})
	m, err := s.Manifest(fanout.PhaseRun{Job: "job-ab12", Spec: "file:///j/job-ab12/job.json", SpecSum: "5ca1ab1e", Phase: 0, Kind: "map", Tasks: 3, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := string(Runnable(m))
	lines := strings.Split(r, "\n")
	sb := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "sbatch ") })
	if len(lines) < 3 || lines[0] != "# phase 0 (map): 3 task(s)" || sb < 1 || !strings.HasPrefix(lines[sb], "sbatch '--parsable' '--export=") || !strings.HasSuffix(lines[sb], " <<'EOF'") {
		t.Fatalf("Runnable:\n%s", r)
	}
	for _, l := range lines[1:sb] {
		if !strings.HasPrefix(l, "# ") {
			t.Errorf("not a comment before the sbatch line: %q", l)
		}
	}
	if strings.Replace(r, "\nsbatch ", "\n# sbatch ", 1) != string(m) {
		t.Errorf("more than the sbatch line changed:\n%s\nfrom:\n%s", r, m)
	}
	if !strings.Contains(r, "exec '/opt/sluice' 'worker' 'file:///j/job-ab12/job.json' '--phase' '0' '--spec-sha256' '5ca1ab1e'\nEOF\n") {
		t.Errorf("the script is not its here-document:\n%s", r)
	}
}

func TestExported(t *testing.T) {
	env := []string{"PATH=/bin", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s",
		"AWS_SESSION_TOKEN=t", "SLUICE_ATTEMPT=x", "EDITOR=vi", "GITHUB_TOKEN=g", "SLUICE_TOKEN=b",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN=c", "AWS_SHARED_CREDENTIALS_FILE=/f"}
	got := Exported(env, []string{"DIST_TEST_WORKER=1"})
	want := []string{"AWS_REGION", "AWS_SHARED_CREDENTIALS_FILE", "DIST_TEST_WORKER", "PATH", "SLUICE_ATTEMPT"}
	if !slices.Equal(got, want) {
		t.Errorf("Exported = %q, want %q", got, want)
	}
	dir := t.TempDir()
	vars, remove, err := credentialsFile(dir, env)
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(vars[0], "AWS_SHARED_CREDENTIALS_FILE=")
	// A worker that finds the driver gone removes it (fanout.EnvDriverFiles).
	if !slices.Contains(vars, fanout.EnvDriverFiles+"="+path) {
		t.Errorf("the workers are not told to remove %s: %q", path, vars)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || filepath.Dir(path) != dir {
		t.Fatalf("credentials file %s: %v, %v", path, fi, err)
	}
	b, _ := os.ReadFile(path)
	if want := "[sluice-job]\naws_access_key_id = k\naws_secret_access_key = s\naws_session_token = t\n"; string(b) != want {
		t.Errorf("credentials file:\n%s\nwant:\n%s", b, want)
	}
	remove()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("credentials file left after remove: %v", err)
	}
	if vars, _, _ := credentialsFile(dir, []string{"AWS_REGION=x"}); vars != nil {
		t.Errorf("no keys, yet %q", vars)
	}
}
