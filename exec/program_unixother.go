//go:build unix && !linux

package exec

import "syscall"

// groupAttr starts a program in a process group of its own, so that
// killing the group kills what it started too.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
