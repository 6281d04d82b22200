// Package stdio says what a process's standard streams are (a pipe, a
// redirected file, a terminal and its width) and readies the pipes
// between sluice stages: a stage reads and writes Arrow IPC on them, and
// shows a table instead when its output is a terminal.
//
// It works on *os.File; any other reader or writer (a buffer in a test) is
// neither a pipe nor a terminal.
package stdio

import (
	"io"
	"os"

	"golang.org/x/term"
)

// TermWidth is the width of the terminal w writes to: 0 when w is not a
// terminal, 80 when the terminal does not say.
func TermWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
		return width
	}
	return 80
}

// IsTerminal says whether s (a reader or a writer) is a terminal.
func IsTerminal(s any) bool {
	f, ok := s.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// IsPipeOrFile says whether r is a pipe or a regular file (stdin
// redirected from one): input that a program, not a person, provides.
func IsPipeOrFile(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && (fi.Mode()&os.ModeNamedPipe != 0 || fi.Mode().IsRegular())
}

// QuietPipes makes a write to a closed pipe an EPIPE error rather than a
// fatal signal, so that a stage whose reader stopped early (head) ends
// quietly, and grows the pipes among stdin and stdout, so that stages
// exchange batches in fewer wakeups. It changes the whole process (its
// SIGPIPE disposition), once and for good.
func QuietPipes(stdin io.Reader, stdout io.Writer) {
	ignoreSIGPIPE()
	for _, x := range []any{stdin, stdout} {
		if f, ok := x.(*os.File); ok {
			growPipe(f)
		}
	}
}
