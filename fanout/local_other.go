//go:build !linux

package fanout

import "os/exec"

// stopWithParent does nothing where the kernel has no parent-death
// signal: there a worker outlives a driver that is killed.
func stopWithParent(cmd *exec.Cmd) {}

// maxRSS is unknown here.
func maxRSS() int64 { return 0 }
