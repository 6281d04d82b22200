package scan

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluice-data/sluice/store"
)

// FileError is a failure to read one file of a dataset: a storage error,
// a file that is not Parquet, corrupt metadata or data, or a type arrow-go
// cannot decode. Its message is one line naming the file. errors.Is and
// store.KindOf see through it to a storage error's kind.
type FileError struct {
	URL string
	Err error
}

func (e *FileError) Error() string {
	msg := e.Err.Error()
	// A storage error already names the object: keep only what it says.
	var se *store.Error
	if errors.As(e.Err, &se) && se.URL == e.URL {
		msg = se.Op + ": " + se.Err.Error()
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return fmt.Sprintf("scan %s: %s", e.URL, msg)
}

func (e *FileError) Unwrap() error { return e.Err }

func fileError(url string, err error) error {
	var fe *FileError
	if errors.As(err, &fe) {
		return err
	}
	return &FileError{URL: url, Err: err}
}

// ErrNotParquet is wrapped by the error of a file without Parquet's
// closing magic: another format, or a Parquet file cut short.
var ErrNotParquet = errors.New("not a Parquet file")

// NoFilesError is a pattern that names no Parquet file. It is a
// store.ErrNotFound.
type NoFilesError struct {
	URL string
}

func (e *NoFilesError) Error() string { return "no parquet files under " + e.URL }

// Is makes errors.Is(err, store.ErrNotFound) hold.
func (e *NoFilesError) Is(target error) bool { return target == store.ErrNotFound }
