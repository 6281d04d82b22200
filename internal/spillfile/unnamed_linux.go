package spillfile

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// createUnnamed opens an unnamed file in dir. It reports false where
// dir's file system cannot (O_TMPFILE is refused) and on any other
// error, which the named path then meets and reports itself.
func createUnnamed(dir, pattern string) (*os.File, bool) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false
	}
	// The name is for messages only: the file has none in dir.
	return os.NewFile(uintptr(fd), filepath.Join(dir, pattern)), true
}
