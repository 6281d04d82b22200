// Package peercred checks who is at the other end of a Unix socket.
package peercred

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

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
