// Package cli is sluice's command line: cmd/sluice and cmd/sluice-full
// are its two programs, the second also carrying gs:// and the kubernetes
// executor (see Main).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluice-data/sluice/bench"
	"github.com/sluice-data/sluice/expr"
	"github.com/sluice-data/sluice/fanout/report"
	"github.com/sluice-data/sluice/store"
)

// Exit codes, mapped here and nowhere else.
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitNotFound   = 3
	exitPermission = 4
	exitInterrupt  = 130
)

// Program is what one of sluice's two programs links beyond what every
// stage needs: sluice's is empty, sluice-full's is whole.
type Program struct {
	// Full: gs://, az:// (abfs[s]://) and the kubernetes executor are linked.
	Full bool
	// Charts draws bench --plot's PNG (bench/chart).
	Charts bench.Charts
	// Report picks how sluice report writes a file (report/render).
	Report func(name string) (func(io.Writer, *report.Report) error, error)
}

// prog is the running program's.
var prog Program

// Main runs the command line in os.Args and exits. sluice, whose Program
// is empty because the SDKs and the plotting library it leaves out cost
// every process tens of milliseconds to start, hands a command line that
// needs them to sluice-full (needsFull, forward).
func Main(p Program) {
	prog = p
	root := newRootCommand()
	if p.Full {
		checkForwarded()
	} else {
		if why := needsFull(root, os.Args[1:]); why != "" {
			forward(why)
		}
		for _, scheme := range fullSchemes {
			store.RegisterScheme(scheme, inFull(scheme))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := unknownCommand(root.ExecuteContext(ctx))
	interrupted := ctx.Err() != nil
	stop()
	if err != nil {
		msg := oneLine(err)
		if interrupted && errors.Is(err, context.Canceled) {
			msg = "interrupted"
		}
		fmt.Fprintf(os.Stderr, "sluice: %s\n", msg)
	}
	os.Exit(exitCode(err, interrupted))
}

func exitCode(err error, interrupted bool) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	var ee *expr.Error
	var ce *expr.ColumnError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ee), errors.As(err, &ce):
		// A malformed expression, a type mismatch or a column the data
		// lacks: the same mistake is a usage error from every command.
		return exitUsage
	case interrupted || errors.Is(err, context.Canceled):
		return exitInterrupt
	}
	switch store.KindOf(err) {
	case store.KindNotFound:
		return exitNotFound
	case store.KindPermission:
		return exitPermission
	case store.KindInvalid:
		return exitUsage
	}
	return exitError
}

// unknownCommand makes cobra's unknown-command error, whose suggestions
// are on later lines, a one-line usage error.
func unknownCommand(err error) error {
	if err == nil || !strings.HasPrefix(err.Error(), "unknown command ") {
		return err
	}
	first, rest, _ := strings.Cut(err.Error(), "\n")
	if _, names, ok := strings.Cut(rest, "Did you mean this?\n"); ok {
		first += "; did you mean " + strings.Join(strings.Fields(names), " or ") + "?"
	}
	return usagef("%s (see sluice --help)", first)
}

// usageError marks a mistake in how the command was called.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func oneLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
