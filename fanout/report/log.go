package report

import (
	"io"

	"github.com/sluice-data/sluice/internal/atomicfile"
	"github.com/sluice-data/sluice/internal/stickyerr"
)

// Log runs run with the writer of an event log (fanout.Options.Events)
// that reaches the file at path whole or not at all, also when run fails:
// that is when a log is wanted most. run's error comes first; a failure to
// write the log is returned only when run succeeded.
func Log(path string, run func(events io.Writer) error) error {
	var runErr error
	werr := atomicfile.Write(path, func(w io.Writer) error {
		ew := &stickyerr.Writer{W: w}
		runErr = run(ew)
		return ew.Err
	})
	if werr != nil && runErr == nil {
		return werr
	}
	return runErr
}
