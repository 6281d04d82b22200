package exec

import (
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

// reopenPipe opens a pipe of its own a second time, through
// /proc/self/fd, in non-blocking mode, or returns nil when f is no pipe
// or that fails. The new descriptor is served by the runtime's poller:
// a goroutine waiting on the pipe parks, where a blocking read or write
// holds a thread and has the runtime hand its P to another (on these
// VMs, thousands of context switches and wakeups a second). Being a
// description of its own, its O_NONBLOCK reaches no other process that
// shares the original descriptor.
func reopenPipe(f *os.File, flag int) *os.File {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var fd uintptr
	if rc.Control(func(d uintptr) { fd = d }) != nil {
		return nil
	}
	// O_NONBLOCK also keeps the open of a write end whose reader has gone
	// from waiting for one (it fails with ENXIO instead).
	own, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(fd)), flag|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return own
}

// iovMax is the most buffers one writev takes (IOV_MAX).
const iovMax = 1024

// writev writes the buffers to f in as few system calls as the file
// takes them.
func writev(f *os.File, vec [][]byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var iov []syscall.Iovec
	for len(vec) > 0 {
		iov = iov[:0]
		for _, b := range vec[:min(len(vec), iovMax)] {
			if len(b) > 0 {
				v := syscall.Iovec{Base: &b[0]}
				v.SetLen(len(b))
				iov = append(iov, v)
			}
		}
		if len(iov) == 0 {
			return nil
		}
		var n uintptr
		var errno syscall.Errno
		err := rc.Write(func(fd uintptr) bool {
			n, _, errno = syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
			return errno != syscall.EAGAIN
		})
		runtime.KeepAlive(vec)
		if err != nil {
			return err
		}
		switch errno {
		case 0:
		case syscall.EINTR:
			continue
		default:
			return &os.PathError{Op: "write", Path: f.Name(), Err: errno}
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		// Drop what was written, perhaps part of a buffer.
		for left := int(n); left > 0; {
			if left < len(vec[0]) {
				vec[0] = vec[0][left:]
				break
			}
			left -= len(vec[0])
			vec = vec[1:]
		}
		for len(vec) > 0 && len(vec[0]) == 0 {
			vec = vec[1:]
		}
	}
	return nil
}
