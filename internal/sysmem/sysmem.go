// Package sysmem says how much memory this process may use: the
// machine's, or less where a control group limits it.
package sysmem

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Total is the memory of the machine, or of the control group the
// process runs in when that is less; 0 when neither can be read.
func Total() int64 {
	n := machine()
	b, _ := os.ReadFile("/proc/self/cgroup")
	// v1's huge number for no limit is more than the machine has.
	if lim := limit(string(b), "/sys/fs/cgroup"); lim > 0 && (n == 0 || lim < n) {
		n = lim
	}
	return n
}

// limit is the lowest memory limit on the process's control groups, named
// by procCgroup (the text of /proc/self/cgroup), and on their ancestors,
// in the tree mounted at fsRoot; 0 for none. Without a cgroup namespace
// the process's group is a subdirectory, and a limit set on any ancestor
// (a systemd slice, a CI job) bounds it too.
func limit(procCgroup, fsRoot string) int64 {
	v2, v1 := cgroupPaths(procCgroup)
	var lim int64
	for _, h := range []struct{ path, mount, file string }{
		{v2, fsRoot, "memory.max"},
		{v1, filepath.Join(fsRoot, "memory"), "memory.limit_in_bytes"},
	} {
		if h.path == "" {
			continue
		}
		// Inside a cgroup namespace, or with the group's own directory
		// mounted at the root (docker on v1), the path names a group the
		// mount does not show: the root is the process's group.
		p := h.path
		if _, err := os.Stat(filepath.Join(h.mount, p)); err != nil {
			p = "/"
		}
		for ; ; p = path.Dir(p) {
			// "max" is no limit; so is a file that is not there (v2's
			// root group has none), which reads empty.
			b, _ := os.ReadFile(filepath.Join(h.mount, p, h.file))
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (lim == 0 || n < lim) {
				lim = n
			}
			if p == "/" {
				break
			}
		}
	}
	return lim
}

// cgroupPaths is the process's group in the v2 hierarchy (the line
// "0::/path") and in v1's memory hierarchy ("N:a,memory,b:/path") of the
// text of /proc/self/cgroup, each "" when absent. The paths are cleaned
// and rooted, so that joined to a mount they stay under it.
func cgroupPaths(procCgroup string) (v2, v1 string) {
	for line := range strings.Lines(procCgroup) {
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
			continue
		}
		p := path.Clean(f[2])
		switch {
		case f[0] == "0" && f[1] == "":
			v2 = p
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			v1 = p
		}
	}
	return v2, v1
}
