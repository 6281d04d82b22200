//go:build !unix

package sim

import (
	"errors"
	"os"
)

var errNoShare = errors.New("reqshare needs a Unix system (file locks and shared mappings)")

func lockFile(*os.File) error               { return errNoShare }
func unlockFile(*os.File) error             { return errNoShare }
func mapFile(*os.File, int) ([]byte, error) { return nil, errNoShare }
func unmapFile([]byte) error                { return errNoShare }
