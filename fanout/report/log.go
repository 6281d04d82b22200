package report

import (
	"io"

	"github.com/sluice-data/sluice/internal/atomicfile"
)

// Log runs run with the writer of an event log (fanout.Options.Events)
// that reaches the file at path whole or not at all, also when run fails:
// that is when a log is wanted most. run's error comes first; a failure to
// write the log is returned only when run succeeded.
func Log(path string, run func(events io.Writer) error) error {
	var runErr error
	werr := atomicfile.Write(path, func(w io.Writer) error {
		ew := &errWriter{w: w}
		runErr = run(ew)
		return ew.err
	})
	if werr != nil && runErr == nil {
		return werr
	}
	return runErr
}

// errWriter keeps the first error of the writer it wraps, so that a log
// that could not be written fails at its end rather than the job.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}
