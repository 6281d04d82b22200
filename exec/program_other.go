//go:build !unix

package exec

import (
	"os"
	osexec "os/exec"
	"syscall"
)

func groupAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

func killedBy(*osexec.ExitError, syscall.Signal) bool { return false }
