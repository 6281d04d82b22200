//go:build !linux

package spillfile

import "os"

func createUnnamed(dir, pattern string) (*os.File, bool) { return nil, false }
