package stdio

import (
	"os"
	"os/signal"
	"syscall"
)

func ignoreSIGPIPE() { signal.Ignore(syscall.SIGPIPE) }

// fSetPipeSize is F_SETPIPE_SZ.
const fSetPipeSize = 1031

// pipeSize is what growPipe asks for.
const pipeSize = 1 << 20

// growPipe asks for a 1 MiB pipe buffer (the default is 64 KiB): a
// stage then hands a batch on in a few writes instead of dozens of
// wakeups. Failing is harmless.
func growPipe(f *os.File) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fSetPipeSize, pipeSize)
}
