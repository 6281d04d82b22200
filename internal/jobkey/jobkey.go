// Package jobkey keeps the key a user's sluice signs the specs of its
// fanned-out jobs with, so that a driver resuming a job trusts only a
// spec one of that user's drivers wrote (see fanout.Options.Key).
package jobkey

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Path is the key's file: sluice/job-key under the user's configuration
// directory ($XDG_CONFIG_HOME, else ~/.config).
func Path() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "sluice", "job-key"), nil
}

// Load reads the key at path, making it first when there is none: 32
// random bytes, hex, readable by the user alone. Two drivers making it at
// once get the same key: it appears whole, under its name, once.
func Load(path string) ([]byte, error) {
	key, err := read(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".job-key-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	b := make([]byte, 32)
	rand.Read(b)
	_, err = f.WriteString(hex.EncodeToString(b) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	// A link, unlike a rename, never replaces a key another driver made.
	if err := os.Link(f.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return read(path)
}

func read(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%s is not a key (64 hex digits): remove it, and a new one is made (jobs started with the old one cannot be resumed)", path)
	}
	return key, nil
}
