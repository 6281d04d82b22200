// Package sysmem says how much memory this process may use: the
// machine's, or less where a control group limits it.
package sysmem

import (
	"os"
	"strconv"
	"strings"
)

// Total is the memory of the machine, or of the control group the
// process runs in when that is less; 0 when neither can be read.
func Total() int64 {
	n := machine()
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// "max" (no limit) and v1's huge number for none parse as no
		// limit or as more than the machine has.
		if lim, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && lim > 0 && (n == 0 || lim < n) {
			n = lim
		}
		break
	}
	return n
}
