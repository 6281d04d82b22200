//go:build unix

package exec

import (
	osexec "os/exec"
	"syscall"
)

func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }

// killedBy says the program ended by signal sig.
func killedBy(ee *osexec.ExitError, sig syscall.Signal) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}
