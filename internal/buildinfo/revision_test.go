package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Built without a VCS stamp (go test), the revision is that of the
// checkout the source is in: the same one git names.
func TestGitRevision(t *testing.T) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout here: %v", err)
	}
	if got, want := GitRevision("."), strings.TrimSpace(string(out)); got != want {
		t.Fatalf("GitRevision = %q, git says %q", got, want)
	}
	if got := SourceRevision(); got != strings.TrimSpace(string(out)) {
		t.Fatalf("SourceRevision = %q", got)
	}
}

const (
	commitA = "0123456789abcdef0123456789abcdef01234567"
	commitB = "fedcba9876543210fedcba9876543210fedcba98"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Each way git records HEAD, laid out by hand, names its commit; what is
// not a commit names none.
func TestGitRevisionLayouts(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string // under the checkout; .git/... or elsewhere
		dir   string            // where to ask, under the checkout
		want  string
	}{
		{"detached", map[string]string{".git/HEAD": commitA + "\n"}, ".", commitA},
		{"branch", map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/main": commitB + "\n"}, ".", commitB},
		{"packed", map[string]string{
			".git/HEAD":        "ref: refs/heads/main\n",
			".git/packed-refs": "# pack-refs with: peeled fully-peeled sorted\n" + commitA + " refs/heads/other\n" + commitB + " refs/heads/main\n",
		}, ".", commitB},
		{"from a subdirectory", map[string]string{".git/HEAD": commitA, "a/b/c.go": ""}, "a/b", commitA},
		{"worktree", map[string]string{
			// The worktree's .git file points into the main checkout's
			// .git, whose commondir holds the shared refs.
			"wt/.git":                          "gitdir: ../main/.git/worktrees/wt\n",
			"main/.git/worktrees/wt/HEAD":      "ref: refs/heads/feature\n",
			"main/.git/worktrees/wt/commondir": "../..\n",
			"main/.git/refs/heads/feature":     commitA + "\n",
			"main/.git/HEAD":                   "ref: refs/heads/main\n",
			"main/.git/refs/heads/main":        commitB + "\n",
		}, "wt", commitA},
		{"not hex", map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/main": "not a commit at all\n"}, ".", ""},
		{"too short", map[string]string{".git/HEAD": "0123456\n"}, ".", ""},
		{"branch nowhere", map[string]string{".git/HEAD": "ref: refs/heads/gone\n"}, ".", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for p, content := range c.files {
				write(t, filepath.Join(root, filepath.FromSlash(p)), content)
			}
			if got := GitRevision(filepath.Join(root, c.dir)); got != c.want {
				t.Fatalf("GitRevision = %q, want %q", got, c.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	v := Version()
	if !strings.HasPrefix(v, "sluice ") || !strings.HasSuffix(v, " "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("Version = %q", v)
	}
	// The module version comes first; a test binary has none.
	if m := Module(); m != "(devel)" || !strings.HasPrefix(v, "sluice "+m+" ") {
		t.Fatalf("Module = %q, Version = %q", m, v)
	}
	// go test stamps no commit: it comes from the checkout, and says so.
	if rev := SourceRevision(); rev != "" && !strings.Contains(v, " "+rev[:12]+" (source checkout) ") {
		t.Fatalf("Version = %q, want the checkout's commit %s", v, rev[:12])
	}
}
