package buildinfo

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// SourceRevision is the commit checked out where this binary's source
// was compiled from, for builds that carry no VCS stamp (go run, go test):
// the compiler records this file's path, and .git beside it says the rest
// in a few small reads. "" when the source is gone, built with -trimpath,
// or not a git checkout.
func SourceRevision() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return GitRevision(filepath.Dir(file))
}

// GitRevision reads the commit of HEAD of the checkout containing dir
// (dir or the nearest parent with a .git), following a worktree's .git
// file, a branch ref and packed-refs. It is "" when there is none, or
// when what HEAD leads to is not a commit's hex digits.
func GitRevision(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		if rev := readRevision(filepath.Join(dir, ".git")); rev != "" {
			return rev
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
func readRevision(gitPath string) string {
	fi, err := os.Stat(gitPath)
	if err != nil {
		return ""
	}
	gitDir := gitPath
	if !fi.IsDir() { // a worktree: "gitdir: PATH"
		b, err := os.ReadFile(gitPath)
		if err != nil {
			return ""
		}
		d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return ""
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(filepath.Dir(gitPath), d)
		}
		gitDir = d
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	ref, isRef := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !isRef {
		return hexOrEmpty(ref)
	}
	for _, d := range []string{gitDir, common} {
		if b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
			return hexOrEmpty(strings.TrimSpace(string(b)))
		}
	}
	packed, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(packed), "\n") {
		if h, name, ok := strings.Cut(line, " "); ok && name == ref {
			return hexOrEmpty(h)
		}
	}
	return ""
}

func hexOrEmpty(s string) string {
	if len(s) < 12 || strings.Trim(s, "0123456789abcdef") != "" {
		return ""
	}
	return s
}
