// Package peercred is how two sluice processes at the ends of a pipe
// find each other: an abstract Unix socket named after the pipe, and who
// is at the other end of it.
package peercred

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// PipeName is the abstract socket name for pipe f and what it is for
// (kind), the same at both of the pipe's ends; false when f is no pipe.
func PipeName(f *os.File, kind string) (string, bool) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("@sluice-%s-%x-%x", kind, st.Dev, st.Ino), true
}

// SameUser checks that the peer of c runs as this process's user: the
// name of an abstract socket is public, what goes through it is not.
func SameUser(c *net.UnixConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("peer runs as user %d", cred.Uid)
	}
	return nil
}
