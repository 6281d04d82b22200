package sysmem

import (
	"os"
	"path"
	"path/filepath"
	"testing"
)

// tree writes files (path relative to root: content) under a new root.
func tree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemoryLimit: the lowest limit from the process's group up to the
// mount's root, in a fake /sys/fs/cgroup.
func TestMemoryLimit(t *testing.T) {
	const v1None = "9223372036854771712\n"
	for _, c := range []struct {
		name   string
		cgroup string
		files  map[string]string
		want   int64
	}{
		{"v2 limit on parent only", "0::/system.slice/job.service\n", map[string]string{
			"memory.max":                          "max\n",
			"system.slice/memory.max":             "2147483648\n",
			"system.slice/job.service/memory.max": "max\n",
		}, 2 << 30},
		{"v2 leaf lower than parent", "0::/ci/runner/job\n", map[string]string{
			"ci/memory.max":            "4294967296\n",
			"ci/runner/memory.max":     "2147483648\n",
			"ci/runner/job/memory.max": "1073741824\n",
		}, 1 << 30},
		{"v2 parent lower than leaf", "0::/ci/runner/job\n", map[string]string{
			"ci/memory.max":            "536870912\n",
			"ci/runner/job/memory.max": "1073741824\n",
		}, 512 << 20},
		{"v2 max everywhere", "0::/user.slice/user-1000.slice/session-1.scope\n", map[string]string{
			"memory.max":                                            "max\n",
			"user.slice/memory.max":                                 "max\n",
			"user.slice/user-1000.slice/memory.max":                 "max\n",
			"user.slice/user-1000.slice/session-1.scope/memory.max": "max\n",
		}, 0},
		{"v2 namespace root", "0::/\n", map[string]string{
			"memory.max": "3221225472\n",
		}, 3 << 30},
		{"v1 memory among other controllers", "12:cpu,cpuacct:/other\n11:memory:/docker/abc\n1:name=systemd:/elsewhere\n0::/\n", map[string]string{
			"memory/memory.limit_in_bytes":            v1None,
			"memory/docker/memory.limit_in_bytes":     v1None,
			"memory/docker/abc/memory.limit_in_bytes": "536870912\n",
			"memory/other/memory.limit_in_bytes":      "1\n",
		}, 512 << 20},
		{"v1 memory in a comma list", "4:cpu,memory,blkio:/a/b\n", map[string]string{
			"memory/a/memory.limit_in_bytes":   "268435456\n",
			"memory/a/b/memory.limit_in_bytes": v1None,
		}, 256 << 20},
		{"v1 no limit is its huge number", "4:memory:/a\n", map[string]string{
			"memory/memory.limit_in_bytes":   v1None,
			"memory/a/memory.limit_in_bytes": v1None,
		}, 9223372036854771712},
		{"v2 and v1 both, the lower", "0::/a\n3:memory:/b\n", map[string]string{
			"a/memory.max":                   "2147483648\n",
			"memory/b/memory.limit_in_bytes": "1073741824\n",
		}, 1 << 30},
		{"v2 path missing under the mount", "0::/lost/group\n", map[string]string{
			"memory.max": "1073741824\n",
		}, 1 << 30},
		{"missing path's existing prefix is another group", "0::/a/lost\n", map[string]string{
			"memory.max":   "1073741824\n",
			"a/memory.max": "1048576\n",
		}, 1 << 30},
		{"v1 path missing under the mount", "5:memory:/docker/0123abcd\n", map[string]string{
			"memory/memory.limit_in_bytes": "805306368\n",
		}, 768 << 20},
		{"no files", "0::/a/b\n", nil, 0},
		{"dot-dot stays under the mount", "0::/../../a\n", map[string]string{
			"a/memory.max": "1073741824\n",
		}, 1 << 30},
		{"colon in the path", "0::/a:b\n", map[string]string{
			"a:b/memory.max": "1073741824\n",
		}, 1 << 30},
		{"garbage in a limit file", "0::/a\n", map[string]string{
			"memory.max":   "-5\n",
			"a/memory.max": "lots\n",
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			tree(t, root, c.files)
			if got := limit(c.cgroup, root); got != c.want {
				t.Fatalf("limit(%q) = %d, want %d", c.cgroup, got, c.want)
			}
		})
	}
}

// TestMemoryLimitMalformed: when /proc/self/cgroup names no group, no
// file is read and there is no limit, even with limits in the tree.
func TestMemoryLimitMalformed(t *testing.T) {
	root := t.TempDir()
	tree(t, root, map[string]string{
		"memory.max":                   "1073741824\n",
		"a/memory.max":                 "1073741824\n",
		"memory/memory.limit_in_bytes": "1073741824\n",
	})
	for _, s := range []string{
		"", "\n", "garbage", "0::", "0::a", "0:/a", ":::", "0::\x00/a",
		"memory:/a", "4:memory:", "4:memory:a", "4:memoryx:/a", "1:cpu:/a\n",
		"\xff\xfe:memory\n",
	} {
		if got := limit(s, root); got != 0 {
			t.Errorf("limit(%q) = %d, want 0", s, got)
		}
	}
}

// FuzzCgroup: any text as /proc/self/cgroup gives paths that are empty or
// rooted and clean, and the walk reads no file outside the mount (the
// limit of 1 just above it).
func FuzzCgroup(f *testing.F) {
	for _, s := range []string{
		"0::/system.slice/job.service\n",
		"12:cpu,cpuacct:/x\n4:memory:/a/b\n1:name=systemd:/\n0::/\n",
		"0::/../../..\n", "4:memory:/a/../..\n", "0::/a:b:c", "", "0::", "::\n::/",
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	root := filepath.Join(dir, "root")
	tree(f, dir, map[string]string{
		"memory.max":                          "1\n",
		"memory/memory.limit_in_bytes":        "1\n",
		"root/memory.max":                     "100\n",
		"root/a/memory.max":                   "50\n",
		"root/memory/memory.limit_in_bytes":   "max\n",
		"root/memory/a/memory.limit_in_bytes": "20\n",
	})
	f.Fuzz(func(t *testing.T, s string) {
		v2, v1 := cgroupPaths(s)
		for _, p := range []string{v2, v1} {
			if p != "" && (p[0] != '/' || path.Clean(p) != p) {
				t.Fatalf("cgroupPaths(%q) gave %q", s, p)
			}
		}
		switch lim := limit(s, root); lim {
		case 0, 20, 50, 100:
		default:
			t.Fatalf("limit(%q) = %d", s, lim)
		}
	})
}
