package exec

import "syscall"

// groupAttr starts a program in a process group of its own, so that
// killing the group kills what it started too; and, as its group no
// longer dies with this process's, has the kernel kill it when this
// process dies however it dies. (The signal follows the OS thread that
// started it; Go ends threads only under LockOSThread, which nothing
// here uses.)
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
