package expr

import (
	"fmt"
	"strings"
)

// Error is a malformed expression, or one whose columns or types do not
// fit its input: Pos is the 1-based character position of the problem in
// Input (one past its end for "the end").
type Error struct {
	Input string
	Pos   int
	Msg   string
	// Err is the classified cause, when there is one (a *ColumnError).
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("at position %d of %q: %s", e.Pos, e.Input, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ColumnError is a column that a schema lacks: a mistake in how a query
// is written, not in the data.
type ColumnError struct {
	Column string
	Have   []string // the columns there are
}

func (e *ColumnError) Error() string {
	return fmt.Sprintf("no column %q (columns: %s)", e.Column, ColumnList(e.Have))
}

// ColumnList is names joined for a message, at most a dozen of them.
func ColumnList(names []string) string {
	const most = 12
	if len(names) == 0 {
		return "none"
	}
	if len(names) > most {
		return strings.Join(names[:most], ", ") + fmt.Sprintf(", ... %d more", len(names)-most)
	}
	return strings.Join(names, ", ")
}
