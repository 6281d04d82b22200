package fanout

import (
	"os/exec"
	"syscall"
)

// stopWithParent makes the kernel send the worker SIGTERM when this
// process dies, however it dies (SIGKILL included): a worker never
// outlives its driver, and stops as on Ctrl-C, deleting what it wrote.
// The signal follows the OS thread that started the worker; Go ends
// threads only under LockOSThread, which nothing here uses.
func stopWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}

// maxRSS is this process's peak resident set so far, in bytes.
func maxRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss << 10 // KiB on Linux
}
