// Package spillfile makes the temporary files that sorts, joins and
// shuffles spill to.
package spillfile

import (
	"os"
	"runtime"
)

// Create makes a temporary file in dir (empty: os.TempDir) that has no
// name in dir, where the system allows it: the open file is then all
// that holds it, so the kernel frees it when the file is closed or the
// process ends, even by SIGKILL, and nothing is left behind. On Linux
// the file is made without a name (O_TMPFILE), so not even a kill at
// the moment of creation leaves one; elsewhere on Unix it is named by
// pattern, as os.CreateTemp does, and the name removed at once. Close it
// when done; Remove deletes what still has a name.
func Create(dir, pattern string) (*os.File, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if f, ok := createUnnamed(dir, pattern); ok {
		return f, nil
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if runtime.GOOS != "windows" {
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Remove closes f and deletes it if it still has a name (Windows, where
// an open file cannot lose it).
func Remove(f *os.File) error {
	err := f.Close()
	if runtime.GOOS == "windows" {
		if rerr := os.Remove(f.Name()); err == nil && !os.IsNotExist(rerr) {
			err = rerr
		}
	}
	return err
}
